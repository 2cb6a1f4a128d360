"""One value cut out of a JSON file, parsed alone: a record, a title's sentences, a whole file.

Errors name the file, the value (``[3]`` for a record of an array, ``["Title"]`` for
a title of a HotpotQA corpus, nothing for the file as a whole) and, for syntax and
nesting, the line in the file: ``corpus.json:7[3]``. Fields past the limits name
their path within the value: ``corpus.json[3]:metadata.author``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hopindex.core.json_input import (
    JsonInputError,
    JsonLimits,
    JsonSyntaxError,
    decode_json,
    find_violation,
)
from hopindex.core.text import printable
from hopindex.readers.base import (
    TEXT_KEYS,
    Item,
    ReadError,
    ReadOptions,
    document_from_record,
    json_error,
    json_limits,
    json_type,
)
from hopindex.readers.json_scan import Extent
from hopindex.readers.json_text import TextWindow


@dataclass(frozen=True, slots=True)
class Place:
    """Where a value's text sits: the file's origin, the value's label and the line and
    column (from 1) of its first character."""

    file: str
    label: str
    line: int
    column: int

    @property
    def origin(self) -> str:
        return f"{self.file}{self.label}"

    def at_line(self, line: int | None) -> str:
        """The origin naming a line of the value's text (counted from 1) in the file."""
        return f"{self.file}:{self.line + (line or 1) - 1}{self.label}"

    def column_of(self, line: int, column: int) -> int:
        return column + (self.column - 1 if line == 1 else 0)


def title_origin(file: str, title: str) -> str:
    # printable: a title holding a surrogate must still make a storable origin.
    return f"{file}[{printable(json.dumps(title, ensure_ascii=False))}]"


def syntax_here(window: TextWindow, file: str, message: str) -> ReadError:
    """JSON malformed between values, at ``window.pos``, named as the parser names it."""
    line, column = window.line_col(window.pos)
    return ReadError(f"{file}:{line}", f"invalid JSON: {message} (column {column})")


def unreadable(window: TextWindow, extent: Extent, origin: str, what: str,
               options: ReadOptions) -> ReadError | None:
    """Why a value cannot be parsed before trying: the scan skipped it for its size
    (``what`` names it: "record is"), or it holds bytes that are not UTF-8."""
    if not extent.kept:
        return ReadError(origin, f"{what} {extent.size:,} characters of JSON, "
                                 f"{options.too_large()}")
    bad = window.bad_in(extent.start, extent.end)
    if bad is not None:
        return ReadError(origin, f"invalid UTF-8 at byte offset {bad.offset} ({bad.reason})")
    return None


def parse_value(text: str, place: Place, limits: JsonLimits) -> tuple[Any, bool] | ReadError:
    """The value and whether it may hold something refused (see ``decode_json``), or
    the syntax or nesting error that stopped its parse, named by line."""
    try:
        return decode_json(text, limits)
    except JsonSyntaxError as exc:
        column = place.column_of(exc.line or 1, exc.column or 1)
        return ReadError(place.at_line(exc.line), f"invalid JSON: {exc.message} (column {column})")
    except JsonInputError as exc:
        return json_error(place.at_line(exc.line), exc)


def record_item(text: str, place: Place, options: ReadOptions) -> Item:
    """One record's JSON text as a document, or the first thing wrong with it."""
    limits = json_limits(options)
    parsed = parse_value(text, place, limits)
    if isinstance(parsed, ReadError):
        return parsed
    value, suspect = parsed
    found = find_violation(value, limits) if suspect else None
    if found is not None:
        return json_error(place.origin, found)
    return document_from_record(value, place.origin, options)


class Checked:
    """The per-record JSON check, for a value whose text may hold something refused."""

    def __init__(self, limits: JsonLimits | None) -> None:
        self.limits = limits

    def refusal(self, origin: str, value: Any, path: str = "") -> ReadError | None:
        if self.limits is None:
            return None
        found = find_violation(value, self.limits, path)
        return None if found is None else json_error(origin, found)


def title_item(title: str, sentences: Any, origin: str, options: ReadOptions,
               checked: Checked, *, hint: str = "") -> Item:
    """One title of a HotpotQA corpus (``{title: [sentence, ...]}``) as a document whose
    text is the sentences joined with "" (they carry their own leading spaces)."""
    refused = checked.refusal(origin, title, "title") or checked.refusal(origin, sentences, "text")
    if refused is not None:
        return refused
    if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
        return ReadError(origin, f"expected a list of sentence strings under the title, "
                                 f"got {json_type(sentences)}{hint}")
    return document_from_record({"title": title, "text": "".join(sentences)}, origin, options)


def whole_file_items(text: str, place: Place, options: ReadOptions) -> Iterator[Item]:
    """A file small enough to parse at once that is not an array: one record object,
    a title -> sentences object, or a top level that is neither (an error)."""
    limits = json_limits(options)
    parsed = parse_value(text, place, limits)
    if isinstance(parsed, ReadError):
        yield parsed
        return
    value, suspect = parsed
    # Numbers, strings and surrogates past the limits fail their own record only.
    checked = Checked(limits if suspect else None)
    if isinstance(value, dict) and any(isinstance(value.get(k), str) for k in TEXT_KEYS):
        yield (checked.refusal(place.file, value)
               or document_from_record(value, place.file, options))
    elif isinstance(value, dict):
        for title, sentences in value.items():
            yield title_item(title, sentences, title_origin(place.file, title), options, checked)
    else:
        yield ReadError(place.file, f"top level is a {json_type(value)}; expected a list of "
                                    "records or an object mapping titles to sentence lists")
