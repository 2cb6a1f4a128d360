"""A JSON file's bytes as text, decoded as they stream in, held in a sliding window.

The JSON reader walks a file of any size through :class:`TextWindow`: chunks of bytes
are decoded as UTF-8 and appended, and text the reader is done with is dropped, so
memory holds about one chunk and the record being read, never the file. The window
knows the line and column of any place it still holds, and where the bytes were not
UTF-8: each bad sequence stands as one U+FFFD in the text and is listed with its byte
offset, so the record holding it fails alone, named by that offset.
"""

from __future__ import annotations

import codecs
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from hopindex.readers.base import UTF8_BOM

# Text kept behind the reading position before it is dropped: dropping copies what
# is left, so it is done once this much is behind, not after every record.
RELEASE_CHARS = 1 << 20
PLACEHOLDER = "\ufffd"
_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _match_end(pattern: re.Pattern[str], text: str, at: int) -> int:
    """Where ``pattern`` (which may match nothing) stops matching from ``at``."""
    found = pattern.match(text, at)
    return found.end() if found else at


@dataclass(frozen=True, slots=True)
class BadBytes:
    """Bytes that are not UTF-8: their placeholder's index in the text, and where
    they are in the file."""

    at: int
    offset: int
    reason: str


class TextWindow:
    """The decoded text of a byte stream, from ``start`` on; indices are absolute
    (characters from the beginning of the text), so they stay valid as text is dropped.

    ``base_offset`` is the file offset of the first byte, for UTF-8 error messages. A
    UTF-8 byte-order mark opening the stream is skipped, as the whole-file decoders do.
    Encoded surrogates (``ED A0 80``) decode to themselves, so the JSON checks name the
    field holding one.
    """

    def __init__(self, chunks: Iterator[bytes], *, base_offset: int = 0) -> None:
        self._chunks = chunks
        self.text = ""
        self.start = 0
        self.pos = 0
        self.eof = False
        self.bad: deque[BadBytes] = deque()
        self._raw = b""
        self._raw_offset = base_offset
        self._opened = False
        # Line and line start at ``_mark``; and at ``start``, to count again from there.
        self._mark = 0
        self._line = 1
        self._bol = 0
        self._start_line = 1
        self._start_bol = 0

    @property
    def end(self) -> int:
        """The absolute index just past the text decoded so far."""
        return self.start + len(self.text)

    def slice(self, begin: int, stop: int) -> str:
        return self.text[begin - self.start:stop - self.start]

    def char(self, index: int) -> str:
        return self.text[index - self.start]

    def fill(self) -> bool:
        """Decode at least one more character; False at the end of the stream."""
        while not self.eof:
            chunk = next(self._chunks, None)
            if chunk is None:
                self.eof = True
                decoded = self._decode(b"", final=True)
            else:
                decoded = self._decode(chunk, final=False)
            if decoded:
                self.text += decoded
                return True
        return False

    def peek(self) -> str:
        """Skip JSON whitespace from ``pos``; the character there, or "" at the end."""
        while True:
            at = _match_end(_WHITESPACE, self.text, self.pos - self.start)
            self.pos = self.start + at
            if at < len(self.text):
                return self.text[at]
            if not self.fill():
                return ""

    def release(self) -> None:
        """Drop the text before ``pos`` once enough of it has piled up."""
        if self.pos - self.start >= RELEASE_CHARS:
            self.discard_before(self.pos)

    def discard_before(self, index: int) -> None:
        """Drop the text before ``index``; its lines are counted first."""
        if index <= self.start:
            return
        self.line_col(index)
        self._start_line, self._start_bol = self._line, self._bol
        self.text = self.text[index - self.start:]
        self.start = index
        while self.bad and self.bad[0].at < index:
            self.bad.popleft()

    def line_col(self, index: int) -> tuple[int, int]:
        """Line and column (from 1, in characters, as JSON errors count them) of
        ``index``, which the window must still hold. Cheap for indices that only grow."""
        if index < self._mark:
            self._mark, self._line, self._bol = self.start, self._start_line, self._start_bol
        low, high = self._mark - self.start, index - self.start
        newlines = self.text.count("\n", low, high)
        if newlines:
            self._line += newlines
            self._bol = self.start + self.text.rfind("\n", low, high) + 1
        self._mark = index
        return self._line, index - self._bol + 1

    def bad_in(self, begin: int, stop: int) -> BadBytes | None:
        """The first bytes that were not UTF-8 in ``[begin, stop)``; earlier ones are
        forgotten (the reader has passed them)."""
        while self.bad and self.bad[0].at < begin:
            self.bad.popleft()
        if self.bad and self.bad[0].at < stop:
            return self.bad[0]
        return None

    def _decode(self, data: bytes, *, final: bool) -> str:
        raw = self._raw + data
        if not self._opened:
            if len(raw) < len(UTF8_BOM) and not final:
                self._raw = raw
                return ""
            self._opened = True
            if raw.startswith(UTF8_BOM):
                raw = raw[len(UTF8_BOM):]
                self._raw_offset += len(UTF8_BOM)
        parts: list[str] = []
        length = 0
        done = 0
        view = memoryview(raw)
        while True:
            try:
                text, used = codecs.utf_8_decode(view[done:], "surrogatepass", final)
            except UnicodeDecodeError as exc:
                good = codecs.utf_8_decode(view[done:done + exc.start], "surrogatepass",
                                           True)[0]
                parts.append(good)
                length += len(good)
                self.bad.append(BadBytes(self.end + length, self._raw_offset + done + exc.start,
                                         exc.reason))
                parts.append(PLACEHOLDER)
                length += 1
                done += exc.end
                continue
            parts.append(text)
            done += used
            break
        self._raw = bytes(view[done:])
        self._raw_offset += done
        return "".join(parts)
