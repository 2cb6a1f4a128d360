"""Where one JSON value, or one line, ends in a :class:`TextWindow`, found without parsing it.

The reader cuts a large file into records with these scans and parses each record
alone, with the bounded parser every JSON input goes through
(``hopindex.core.json_input``): so a record's faults are reported for that record,
and no record longer than a document may be is ever held. The scan follows strings
and brackets only; a record that is not valid JSON is found by its parse, the scan
merely bounds it. Regular expressions find the next quote or bracket run, so the
cost grows with the number of strings and containers, not of characters.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from hopindex.readers.json_text import TextWindow

# Outside a string, the tokens that change the scan: a whole string (so its content
# is skipped in one match), a quote whose string runs past the text so far, and runs
# of opening or closing brackets. Inside a string carried over from the text before:
# its body, up to the closing quote or a backslash that ends the text so far. And the
# end of a bare value (number, literal or junk).
_STRING = r'"[^"\\]*(?:\\[\s\S][^"\\]*)*"'
_TOKEN = re.compile(rf'{_STRING}|"|[\[{{]+|[\]}}]+')
_STRING_BODY = re.compile(r'[^"\\]*(?:\\[\s\S][^"\\]*)*')
_BARE_END = re.compile(r"[ \t\n\r,\]}]")


class Overflow(enum.Enum):
    """What a scan does with a value longer than its limit."""

    SKIP = "skip"  # scan on to its end, dropping its text; report it as not kept
    STOP = "stop"  # give up at once, leaving the window and its position as they were


@dataclass(frozen=True, slots=True)
class Extent:
    """A value's place: ``[start, end)`` in absolute indices, and the line and column
    where it starts. ``complete`` is False when the text ended inside it; ``kept`` is
    False when it was longer than the limit, so its text is gone."""

    start: int
    end: int
    line: int
    column: int
    complete: bool
    kept: bool

    @property
    def size(self) -> int:
        return self.end - self.start


class _Scan:
    """The state of a scan across refills of the window."""

    def __init__(self, first: str) -> None:
        self.depth = 1 if first in "[{" else 0
        self.in_string = first == '"'
        self.bare = first not in '"[{'

    def advance(self, text: str, at: int) -> tuple[int, bool]:
        """From ``text[at]``: (where the value ends, True) or (where to resume, False)."""
        if self.bare:
            found = _BARE_END.search(text, at)
            return (found.start(), True) if found else (len(text), False)
        if self.in_string:
            found = _STRING_BODY.match(text, at)
            stop = found.end() if found else at
            if stop == len(text) or text[stop] != '"':
                return stop, False
            self.in_string = False
            at = stop + 1
            if self.depth == 0:
                return at, True
        for token in _TOKEN.finditer(text, at):
            begin, end = token.span()
            first = text[begin]
            if first == '"':
                if end - begin == 1:  # runs past the text: carry on inside it
                    self.in_string = True
                    return self.advance(text, end)
            elif first in "[{":
                self.depth += end - begin
            elif end - begin >= self.depth:
                return begin + self.depth, True
            else:
                self.depth -= end - begin
        return len(text), False


def scan_value(window: TextWindow, limit: int) -> Extent:
    """The value at ``window.pos`` (not whitespace, not the end), consumed. One longer
    than ``limit`` characters is scanned to its end in bounded memory and returned not
    kept. A bare character that cannot start a value (``}``) is a one-character value,
    so a caller always moves on."""
    extent = _scan(window, limit, Overflow.SKIP)
    assert extent is not None  # only STOP gives up
    return extent


def fit_value(window: TextWindow, limit: int) -> Extent | None:
    """As :func:`scan_value`, but a value longer than ``limit`` is None, with nothing
    consumed and the window still holding the text from ``window.pos``."""
    return _scan(window, limit, Overflow.STOP)


def _scan(window: TextWindow, limit: int, overflow: Overflow) -> Extent | None:
    start = window.pos
    line, column = window.line_col(start)
    scan = _Scan(window.char(start))
    at = start + 1
    kept = True
    while True:
        local, ended = scan.advance(window.text, at - window.start)
        at = window.start + local
        if ended:
            complete = True
            break
        if kept and at - start > limit:
            if overflow is Overflow.STOP:
                return None
            kept = False
        if not kept:
            window.discard_before(at)
        if not window.fill():
            # A bare value ends where the text does; a string or container is cut off.
            complete = scan.bare
            break
    if kept and at - start > limit:
        if overflow is Overflow.STOP:
            return None
        kept = False
    window.pos = at
    return Extent(start, at, line, column, complete, kept)


def take_line(window: TextWindow, limit: int) -> Extent | None:
    """The line at ``window.pos`` without its newline, consumed with it; None at the
    end of the text. A line longer than ``limit`` is skipped in bounded memory and
    returned not kept."""
    start = window.pos
    if start == window.end and not window.fill():
        return None
    line, column = window.line_col(start)
    at = start
    kept = True
    while True:
        newline = window.text.find("\n", at - window.start)
        if newline >= 0:
            end = window.start + newline
            window.pos = end + 1
            break
        at = window.end
        if kept and at - start > limit:
            kept = False
        if not kept:
            window.discard_before(at)
        if not window.fill():
            end = window.pos = at
            break
    return Extent(start, end, line, column, True, kept and end - start <= limit)
