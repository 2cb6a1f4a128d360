"""JSON (``.json``, or gzip-compressed ``.json.gz``): a corpus whose shape says its format.

Accepted shapes, told apart by content:

- a list of records ``{id?, title?, text, metadata?}`` — which covers the
  2Wiki/MuSiQue corpora (``{title, text}``) and paragraph lists
  (``{title, paragraph_text}``);
- an object ``{title: [sentence, ...]}`` — the HotpotQA corpus, whose text is
  the sentences joined with "" (they carry their own leading spaces);
- a single record object with a string ``text``;
- JSON Lines saved under a ``.json`` name.

The file is streamed, never read whole: a list is cut into records that are parsed
one at a time (``json_scan``), so memory holds about one record and one chunk of the
file whatever its size, and a record that is malformed, too large or not UTF-8 fails
alone, named by its index (``corpus.json[7]``, with the line for syntax:
``corpus.json:12[7]``) while the others are read. An object small enough to be one
record is parsed whole, as is whatever the top level holds when it is neither; a
larger object is a title -> sentences corpus, read title by title (``json_titles``).
"""

from __future__ import annotations

from collections.abc import Iterator

from hopindex.readers.base import Item, ReadError, ReadOptions, Source
from hopindex.readers.compression import SourceReadError, read_chunks
from hopindex.readers.json_line import line_limit, parse_line
from hopindex.readers.json_scan import Extent, fit_value, scan_value, take_line
from hopindex.readers.json_text import TextWindow
from hopindex.readers.json_titles import read_titles
from hopindex.readers.json_values import (
    Place,
    record_item,
    syntax_here,
    unreadable,
    whole_file_items,
)

_LIST_ENDS_EARLY = "file ends before the list is closed"


def read_json(source: Source, options: ReadOptions) -> Iterator[Item]:
    try:
        fh = source.open_bytes()
    except OSError as exc:
        yield ReadError(source.origin, f"cannot read: {exc.strerror or exc}")
        return
    with fh:
        yield from read_json_stream(read_chunks(fh), source, options)


def read_json_stream(chunks: Iterator[bytes], source: Source, options: ReadOptions, *,
                     base_offset: int = 0) -> Iterator[Item]:
    """The documents of a JSON file arriving as ``chunks`` of bytes, the first of them
    at byte ``base_offset`` of the file (for the offsets of UTF-8 errors)."""
    window = TextWindow(chunks, base_offset=base_offset)
    file = source.origin
    try:
        first = window.peek()
        if first == "[":
            yield from _read_array(window, file, options)
        elif first == "{":
            yield from _read_object(window, file, options)
            return
        else:
            yield from _read_other(window, file, options)
            return
        yield from _after_top_level(window, file)
    except SourceReadError as exc:
        yield ReadError(file, str(exc))


def _after_top_level(window: TextWindow, file: str) -> Iterator[Item]:
    if window.peek():
        yield syntax_here(window, file, "Extra data")


def _read_array(window: TextWindow, file: str, options: ReadOptions) -> Iterator[Item]:
    limit = line_limit(options)
    window.pos += 1
    index = 0
    while True:
        following = window.peek()
        if following == "]" and index == 0:
            window.pos += 1
            return
        if following in ("]", ""):
            # "]" after a comma: the comma was one too many.
            yield syntax_here(window, file, "Expecting value" if following else _LIST_ENDS_EARLY)
            window.pos += len(following)
            return
        extent = scan_value(window, limit)
        yield _record(window, extent, file, index, options)
        if not extent.complete:  # the file ended inside it: nothing more to say
            return
        index += 1
        window.release()
        following = window.peek()
        if following == ",":
            window.pos += 1
        elif following == "]":
            window.pos += 1
            return
        elif not following:
            yield syntax_here(window, file, _LIST_ENDS_EARLY)
            return
        else:
            # Read on as if the comma were there: the next value is most likely a record.
            yield syntax_here(window, file, "Expecting ',' delimiter")


def _record(window: TextWindow, extent: Extent, file: str, index: int,
            options: ReadOptions) -> Item:
    place = Place(file, f"[{index}]", extent.line, extent.column)
    if not extent.complete and not extent.kept:
        return ReadError(place.at_line(1), f"invalid JSON: file ends inside the record, "
                                           f"{extent.size:,} characters on")
    refused = unreadable(window, extent, place.origin, "record is", options)
    if refused is not None:
        return refused
    # A record cut off by the end of the file is parsed too: the parser names the fault.
    return record_item(window.slice(extent.start, extent.end), place, options)


def _read_object(window: TextWindow, file: str, options: ReadOptions) -> Iterator[Item]:
    extent = fit_value(window, line_limit(options))
    if extent is None:
        # Too large for one record: a title -> sentences corpus.
        if (yield from read_titles(window, file, options)):
            yield from _after_top_level(window, file)
        return
    if extent.complete and window.peek():
        if _alone_on_its_line(window, extent):
            yield from _read_lines(window, file, options, extent)
        else:
            yield syntax_here(window, file, "Extra data")
        return
    yield from _whole(window, extent.start, extent.end, file, options)


def _alone_on_its_line(window: TextWindow, extent: Extent) -> bool:
    """JSON Lines under a .json name: the first object ends its line, and more follows."""
    return ("\n" not in window.slice(extent.start, extent.end)
            and "\n" in window.slice(extent.end, window.pos))


def _read_other(window: TextWindow, file: str, options: ReadOptions) -> Iterator[Item]:
    """A top level that is neither a list nor an object: parsed whole for its message
    (a scalar, a syntax error, an empty file), unless it is too long to be any corpus."""
    start = window.pos
    while window.fill():
        if window.end - start > line_limit(options):
            yield ReadError(file, f"top level starts with {window.char(start)!r}; expected a "
                                  "list of records or an object mapping titles to sentence "
                                  "lists")
            return
    yield from _whole(window, start, window.end, file, options)


def _whole(window: TextWindow, start: int, end: int, file: str,
           options: ReadOptions) -> Iterator[Item]:
    bad = window.bad_in(start, end)
    if bad is not None:
        yield ReadError(file, f"invalid UTF-8 at byte offset {bad.offset} ({bad.reason})")
        return
    line, column = window.line_col(start)
    yield from whole_file_items(window.slice(start, end), Place(file, "", line, column),
                                options)


def _read_lines(window: TextWindow, file: str, options: ReadOptions,
                first: Extent) -> Iterator[Item]:
    limit = line_limit(options)
    line: Extent | None = first
    while line is not None:
        origin = f"{file}:{line.line}"
        bad = window.bad_in(line.start, line.end)
        if not line.kept:
            yield ReadError(origin, f"line is {line.size:,} characters, "
                                    f"{options.too_large()}")
        elif bad is not None:
            yield ReadError(origin, f"invalid UTF-8 at byte offset {bad.offset} ({bad.reason})")
        else:
            item = parse_line(window.slice(line.start, line.end), origin, options)
            if item is not None:
                yield item
        window.release()
        line = take_line(window, limit)
