"""The one parser for JSON that comes from outside: request bodies, uploads and files.

Python's own parser is unbounded in ways that turn hostile input into crashes: it
recurses once per nesting level (``[[[[…`` raises RecursionError), refuses integers
past 4,300 digits with a ValueError, and lets ``"\\ud800"`` through as a string no
store can keep. Here every such input becomes a :class:`JsonInputError` naming the
field as a path (``metadata.tags[1]``, ``question``) and, where the text says, the
line, within limits that are named constants (:class:`JsonLimits`):

- nesting is checked on the raw text before parsing, without recursion, so the
  parser never goes deeper than ``max_depth``;
- numbers are read through hooks that never convert a literal longer than
  ``max_number_chars`` and keep it, with ``NaN``, ``Infinity`` and numbers out of a
  float's range, as a marker that the check after parsing reports by path;
- strings longer than ``max_string_chars`` and unpaired surrogates, escaped or raw,
  are found by a walk with an explicit stack.

The checks cost next to nothing on ordinary input: the walk runs only when a cheap
scan of the text says something could be wrong.
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any

from hopindex.core.errors import InvalidInputError
from hopindex.core.text import key_path, surrogate_at

# Deeper than any document or request needs; far below the interpreter's recursion
# limit, so neither the parser nor the encoders that later write the value recurse out.
MAX_JSON_DEPTH = 128
# Characters of one number literal (sign, digits, fraction, exponent): a double needs
# 25, a 64-bit integer 20.
MAX_JSON_NUMBER_CHARS = 100
# Characters of one string or key, unless the reader sets its own (documents use
# max_document_bytes).
MAX_JSON_STRING_CHARS = 1_000_000
# A path deeper than this is shown cut here: the field it names holds the fault.
MAX_PATH_PARTS = 12

# A string, escapes included; the tokens that shape a value (strings, punctuation).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_TOKEN = re.compile(rf'{_STRING.pattern}|[\[\]{{}},:]')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_RUN = re.compile(r"\[+|\]+")
# A surrogate written as an escape; escaped pairs (emoji) are harmless but rare.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


@dataclass(frozen=True, slots=True)
class JsonLimits:
    max_depth: int = MAX_JSON_DEPTH
    max_number_chars: int = MAX_JSON_NUMBER_CHARS
    max_string_chars: int = MAX_JSON_STRING_CHARS
    # What governs max_string_chars, named in the message (a setting, or "").
    string_limit_name: str = ""


DEFAULT_LIMITS = JsonLimits()


class JsonInputError(InvalidInputError):
    """JSON that is malformed or past a limit.

    ``path`` is the field (``metadata.tags[1]``; ``""`` for the value as a whole),
    ``reason`` what is wrong with it, ``line`` and ``column`` where in the text, when
    the text says (syntax and nesting errors). ``where`` is the path, so an API answer
    names it as its field.
    """

    def __init__(self, reason: str, *, path: str = "", line: int | None = None,
                 column: int | None = None) -> None:
        self.reason = reason
        self.path = path
        self.line = line
        self.column = column
        super().__init__(self.described)
        self.where = path

    @property
    def described(self) -> str:
        subject = f"field '{self.path}'" if self.path else "the JSON text"
        return f"{subject} {self.reason}"


class JsonSyntaxError(JsonInputError):
    """Text that is not JSON; ``message`` is the parser's own words."""

    def __init__(self, message: str, *, line: int, column: int) -> None:
        self.message = message
        super().__init__(f"is not valid JSON: {message}", line=line, column=column)

    @property
    def described(self) -> str:
        return f"invalid JSON: {self.message} (line {self.line}, column {self.column})"


def decode_json_bytes(data: bytes) -> str:
    """UTF-8 ``data`` as text. Encoded surrogates (``ED A0 80``) are let through, so the
    check after parsing names the field holding one; any other bad byte is a
    JsonInputError at its byte offset."""
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise JsonInputError(f"is not UTF-8 text: invalid byte at offset {exc.start} "
                             f"({exc.reason})") from None


def parse_json(text: str, limits: JsonLimits = DEFAULT_LIMITS) -> Any:
    """``text`` as a JSON value within ``limits``; JsonInputError for anything else."""
    value, suspect = decode_json(text, limits)
    if suspect:
        found = find_violation(value, limits)
        if found is not None:
            raise found
    return value


def decode_json(text: str, limits: JsonLimits = DEFAULT_LIMITS) -> tuple[Any, bool]:
    """Parse ``text``, refusing bad syntax and nesting past ``limits.max_depth`` (they
    stop a parse), and say whether the value may hold something :func:`find_violation`
    refuses. A caller that splits the value into records checks each one, so a bad
    record fails alone; a value said not suspect needs no check."""
    too_deep = _too_deep(text, limits.max_depth)
    if too_deep is not None:
        raise too_deep
    _refused.count = 0
    try:
        value = _decoder(limits.max_number_chars).decode(text)
    except json.JSONDecodeError as exc:
        raise JsonSyntaxError(exc.msg, line=exc.lineno, column=exc.colno) from None
    except RecursionError:  # cannot happen within max_depth; kept as the last guard
        raise JsonInputError(f"is nested deeper than {limits.max_depth} levels") from None
    suspect = (_refused.count > 0 or len(text) > limits.max_string_chars
               or _may_hold_surrogate(text))
    return value, suspect


def find_violation(value: Any, limits: JsonLimits = DEFAULT_LIMITS,
                   path: str = "") -> JsonInputError | None:
    """The first string, key or number in ``value`` (in text order) that ``limits``
    refuse; depth-first with an explicit stack."""
    pending: list[tuple[str, Any]] = [(path, value)]
    while pending:
        where, item = pending.pop()
        if isinstance(item, str):
            found = _string_violation(where, item, limits)
        elif isinstance(item, _RefusedNumber):
            found = JsonInputError(item.reason, path=where)
        elif isinstance(item, dict):
            found = _keys_violation(where, item, limits)
            pending.extend((key_path(where, k), v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            found = None
            pending.extend((f"{where}[{i}]", item[i]) for i in range(len(item) - 1, -1, -1))
        else:
            found = None
        if found is not None:
            return found
    return None


def _string_violation(path: str, text: str, limits: JsonLimits) -> JsonInputError | None:
    if len(text) > limits.max_string_chars:
        return JsonInputError(f"is a string of {len(text):,} characters, "
                              f"{_over_string_limit(limits)}", path=path)
    at = surrogate_at(text)
    if at is not None:
        return JsonInputError(f"holds an unpaired surrogate (U+{ord(text[at]):04X}) at "
                              f"character {at}, which is not valid Unicode text", path=path)
    return None


def _keys_violation(path: str, item: dict[str, Any], limits: JsonLimits
                    ) -> JsonInputError | None:
    for key in item:
        if len(key) > limits.max_string_chars:
            return JsonInputError(f"has a key of {len(key):,} characters, "
                                  f"{_over_string_limit(limits)}", path=path)
        if surrogate_at(key) is not None:
            return JsonInputError("is a key holding an unpaired surrogate, which is not valid "
                                  "Unicode text", path=key_path(path, key))
    return None


def _over_string_limit(limits: JsonLimits) -> str:
    if limits.string_limit_name:
        return f"over {limits.string_limit_name}={limits.max_string_chars:,}"
    return f"over the limit of {limits.max_string_chars:,}"


def _may_hold_surrogate(text: str) -> bool:
    """Escaped (``\\ud800``) or raw (a str decoded with surrogatepass, or a caller's);
    both scans run at C speed, which a character class over non-ASCII text does not."""
    if _SURROGATE_ESCAPE.search(text) is not None:
        return True
    return not text.isascii() and surrogate_at(text) is not None


# --- nesting, checked on the text ------------------------------------------------------

def _too_deep(text: str, max_depth: int) -> JsonInputError | None:
    """The container that opens past ``max_depth``, named by its path and line."""
    if not _may_nest_past(text, max_depth):
        return None
    # One frame per open container: [bracket, index or key, expecting a key].
    frames: list[list[Any]] = []
    for token in _TOKEN.finditer(text):
        mark = token.group()
        top = frames[-1] if frames else None
        if mark in "[{":
            if len(frames) >= max_depth:
                return _depth_error(text, token.start(), frames, max_depth)
            frames.append([mark, 0 if mark == "[" else None, mark == "{"])
        elif mark in "]}":
            if frames:
                frames.pop()
        elif top is None:
            continue
        elif mark == ",":
            if top[0] == "[":
                top[1] += 1
            else:
                top[2] = True
        elif mark == ":":
            top[2] = False
        elif top[0] == "{" and top[2]:
            top[1] = _key_text(mark)
    return None


def _may_nest_past(text: str, max_depth: int) -> bool:
    """Whether ``text`` nests deeper than ``max_depth``, found at C speed for the most
    part: fewer brackets than that cannot; otherwise strings and all but brackets are
    removed and the depth followed run by run (``[[[`` adds three), so the cost grows
    with the runs of brackets, not with the text."""
    if text.count("[") + text.count("{") <= max_depth:
        return False
    # Braces as brackets: depth counts containers of either kind.
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text)).replace("{", "[").replace("}", "]")
    depth = 0
    for run in _BRACKET_RUN.finditer(brackets):
        if run.group()[0] == "[":
            depth += len(run.group())
            if depth > max_depth:
                return True
        else:
            depth = max(0, depth - len(run.group()))
    return False


def _key_text(token: str) -> str:
    try:
        key = json.loads(token)
    except ValueError:
        return token[1:-1]
    return key if isinstance(key, str) else token[1:-1]


def _depth_error(text: str, offset: int, frames: list[list[Any]],
                 max_depth: int) -> JsonInputError:
    path = ""
    for bracket, at, _ in frames[:MAX_PATH_PARTS]:
        path = f"{path}[{at}]" if bracket == "[" else key_path(path, at or "")
    line = text.count("\n", 0, offset) + 1
    column = offset - text.rfind("\n", 0, offset)
    return JsonInputError(f"nests JSON deeper than {max_depth} levels", path=path,
                          line=line, column=column)


# --- numbers, read through hooks -------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _RefusedNumber:
    """A number literal left unconverted; find_violation reports it by its path."""

    reason: str


class _RefusedCount(threading.local):
    count = 0


# Per thread: ingest reads files on several threads at once.
_refused = _RefusedCount()


def _refuse(reason: str) -> _RefusedNumber:
    _refused.count += 1
    return _RefusedNumber(reason)


# What a message shows of a value: a literal is cut past this many characters, a number
# past MAX_SHOWN_NUMBER_CHARS is shown to SHOWN_DIGITS significant digits.
MAX_SHOWN_LITERAL_CHARS = 40
MAX_SHOWN_NUMBER_CHARS = 20
SHOWN_DIGITS = 6


def shown_literal(literal: str) -> str:
    """``literal`` short enough for a message: its head and tail around an ellipsis."""
    if len(literal) <= MAX_SHOWN_LITERAL_CHARS:
        return literal
    return f"{literal[:20]}…{literal[-8:]}"


def shown_number(value: int | float) -> str:
    """``value`` short enough for a message: as Python writes it when that is short,
    else in scientific notation to six significant digits (``1e+308``,
    ``-1.23457e+29``), an integer past a float's range included, without converting
    it to one."""
    text = repr(value)
    if len(text) <= MAX_SHOWN_NUMBER_CHARS:
        return text
    # Decimal, not float: an integer of any size, rounded, without overflow.
    mantissa, _, exponent = format(Decimal(value), f".{SHOWN_DIGITS}g").partition("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{exponent}" if exponent else mantissa


@lru_cache(maxsize=8)
def _decoder(max_number_chars: int) -> json.JSONDecoder:
    """A decoder (one per limit; it holds no state) that converts no number literal
    longer than ``max_number_chars``: Python refuses integers of over 4,300 digits with
    a ValueError, and converting long ones costs time quadratic in their length."""

    def too_long(literal: str) -> _RefusedNumber:
        return _refuse(f"holds a number of {len(literal):,} characters, over the limit of "
                       f"{max_number_chars:,}")

    def read_int(literal: str) -> int | _RefusedNumber:
        return int(literal) if len(literal) <= max_number_chars else too_long(literal)

    def read_float(literal: str) -> float | _RefusedNumber:
        if len(literal) > max_number_chars:
            return too_long(literal)
        number = float(literal)
        if math.isinf(number):
            return _refuse(f"holds the number {shown_literal(literal)}, out of the range of a "
                           f"64-bit float (±{shown_number(sys.float_info.max)})")
        return number

    def read_constant(literal: str) -> _RefusedNumber:
        return _refuse(f"holds {literal}, which is not a JSON number")

    return json.JSONDecoder(parse_int=read_int, parse_float=read_float,
                            parse_constant=read_constant)
