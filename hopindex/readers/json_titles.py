"""A HotpotQA corpus too large to parse at once, ``{title: [sentence, ...], ...}``,
read title by title from a :class:`TextWindow`.

Each title and its sentences are cut out by the scan and parsed alone, so one title's
faults (a malformed list, an unpaired surrogate, bytes that are not UTF-8) fail that
title only, named ``corpus.json["Title"]``; a fault between titles that leaves no way
to find the next one (a missing colon, a key that is not a string) ends the file
there, named by line and column, after the titles before it.
"""

from __future__ import annotations

from collections.abc import Generator

from hopindex.readers.base import TEXT_KEYS, Item, ReadError, ReadOptions, json_limits
from hopindex.readers.json_line import line_limit
from hopindex.readers.json_scan import Extent, scan_value
from hopindex.readers.json_text import TextWindow
from hopindex.readers.json_values import (
    Checked,
    Place,
    parse_value,
    syntax_here,
    title_item,
    title_origin,
    unreadable,
)

_ENDS_EARLY = "file ends before the object is closed"


def _expected(window: TextWindow, file: str, what: str) -> ReadError:
    """What the parser would say on finding something else, or the end, at ``pos``."""
    return syntax_here(window, file, f"Expecting {what}" if window.peek() else _ENDS_EARLY)


def read_titles(window: TextWindow, file: str,
                options: ReadOptions) -> Generator[Item, None, bool]:
    """The object opening at ``window.pos``, consumed up to its closing brace; returns
    whether it closed (else reading stopped at a fault, already reported)."""
    limit = line_limit(options)
    window.pos += 1
    while True:
        if window.peek() != '"':
            yield _expected(window, file, "property name enclosed in double quotes")
            return False
        key = scan_value(window, limit)
        if window.peek() != ":":
            yield _expected(window, file, "':' delimiter")
            return False
        window.pos += 1
        if not window.peek():
            yield syntax_here(window, file, _ENDS_EARLY)
            return False
        value = scan_value(window, limit)
        yield _title(window, key, value, file, options)
        if not value.complete:  # the file ended inside it: nothing more to say
            return False
        window.release()
        following = window.peek()
        if following == "}":
            window.pos += 1
            return True
        if following == ",":
            window.pos += 1
        elif not following:
            yield syntax_here(window, file, _ENDS_EARLY)
            return False
        else:
            # Read on as if the comma were there, when a title follows.
            yield syntax_here(window, file, "Expecting ',' delimiter")


def _title(window: TextWindow, key: Extent, value: Extent, file: str,
           options: ReadOptions) -> Item:
    limits = json_limits(options)
    where = Place(file, "", key.line, key.column)
    refused = unreadable(window, key, where.at_line(1), "a title of", options)
    parsed = refused or parse_value(window.slice(key.start, key.end), where, limits)
    if isinstance(parsed, ReadError):
        return parsed
    title = parsed[0]
    origin = title_origin(file, title)
    place = Place(file, origin.removeprefix(file), value.line, value.column)
    if not value.complete and not value.kept:
        return ReadError(place.at_line(1), f"invalid JSON: file ends inside the sentences, "
                                           f"{value.size:,} characters on")
    refused = unreadable(window, value, origin, "the sentences are", options)
    parsed = refused or parse_value(window.slice(value.start, value.end), place, limits)
    if isinstance(parsed, ReadError):
        return parsed
    sentences = parsed[0]
    # A record's fields under an object this large: say why it is not read as one.
    hint = (f"; an object of over {line_limit(options):,} characters is read as titles "
            "mapped to sentence lists, not as one record"
            if title in TEXT_KEYS and isinstance(sentences, str) else "")
    return title_item(title, sentences, origin, options, Checked(limits), hint=hint)
