"""Where a PDF page's text and headings fall: text normalisation, the outline's headings,
and placing each heading in its page's text.

Headings come from the outline (bookmarks) alone: their levels, known before a page is
read, and their pages. On its page, a heading is placed where its title is in the text
(compared without whitespace or case, and with any section number before it), the
heading's line then left out of the body; else where the bookmark points (its ``y``);
else at the start of what is left of the page.

Apart from ``pdf`` because this is what the text is made into once pdfium has read it,
and changes for other reasons (how titles are matched, what a page's text is cleaned
of) than opening a file and walking its pages. It does not take the pdfium lock: the
functions given a pdfium object (a document, a destination, a text page) call into
pdfium, and run only under ``pdf._PDFIUM``, which ``pdf`` holds around every call it
makes here (taking it here would import ``pdf``, which imports this module).
"""

from __future__ import annotations

import bisect
import ctypes
import itertools
import math
import operator
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pypdfium2.raw as pdfium_c  # type: ignore[import-untyped]

from hopindex.readers.files.model import Block

# --- text normalisation -------------------------------------------------------------

_LINE_BREAK = re.compile(r"\r\n?")
# A line-end hyphen between two word characters: pdfium itself marks the ones it
# recognises with U+FFFE (U+0002 in bounded text) and drops the line break; others
# stay as "-" and a newline. Joined when both letters are lowercase ("infor-\nmation").
_HYPHEN = re.compile(r"(\w)(-[ \t]*\n|\ufffe|\x02)(?=(\w))")
# Control characters but tab and newline, a soft hyphen, pdfium's leftover markers.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\ufffe\uffff]")
_SPACES = re.compile(r" {2,}")
_LINE_EDGES = re.compile(r" *\n *")
_BLANK_LINES = re.compile(r"\n{3,}")
# Anything a page would be read for: not whitespace, a control character or a marker.
VISIBLE = re.compile(r"[^\s\x00-\x1f\x7f-\x9f\u00ad\ufffe\uffff]")


def _join_hyphen(match: re.Match[str]) -> str:
    before, separator, after = match.group(1), match.group(2), match.group(3)
    if before.islower() and after.islower():
        return before
    # Not a word split across lines: pdfium's marker goes back to a hyphen and a line end.
    return before + ("-\n" if separator in ("\ufffe", "\x02") else separator)


def normalize_text(text: str) -> str:
    """Page text as passages want it: newlines only, line-end hyphenation joined, no
    control characters, single spaces, no blank runs of more than one line."""
    text = _LINE_BREAK.sub("\n", text)
    text = _HYPHEN.sub(_join_hyphen, text)
    text = _CONTROL.sub("", text)
    text = _SPACES.sub(" ", text)
    text = _LINE_EDGES.sub("\n", text)
    return _BLANK_LINES.sub("\n\n", text).strip()


def clean_line(text: str) -> str:
    """A title on one line: control characters dropped, whitespace collapsed."""
    return " ".join(_CONTROL.sub("", text).split())


# --- headings -----------------------------------------------------------------------

# A section number before a heading's title, on the page or in the outline: "3", "2.1.",
# "IV.", "B)", "A.2", "§ 4", "Chapter 3:", "Appendix B". Roman numerals and letters need
# their "." or ")" so that a word ("Civil War", "A Study") is not taken for one.
_NUMBER = re.compile(
    r"(?:(?:chapter|section|part|appendix|annex|article)\s+(?:\d+|[ivxlcdm]+|[a-z])"
    r"(?!\w)[.:)]?"
    r"|\d+(?:\.\d+)*(?:[.:)]|(?!\w))"
    r"|[ivxlcdm]+[.)]"
    r"|[a-z][.)](?:\d+(?:\.\d+)*[.:)]?)?"
    r"|§\s*\d+(?:\.\d+)*)", re.IGNORECASE)
# What may follow a heading's title on its line.
_LINE_END = frozenset(" \t.:")
# How far above a bookmark's y a matching line may start and still be its heading, in
# points: destinations point at the top of the heading, or a line above it.
_Y_TOLERANCE = 4.0


def _fold(bare: str) -> str:
    """Case folded, one character for one (a character whose folding is longer, "ß" to
    "ss", is kept as it is), so that positions carry over."""
    folded = bare.casefold()
    if len(folded) == len(bare):
        return folded
    return "".join(char if len(char.casefold()) != 1 else char.casefold() for char in bare)


def _squeeze(text: str) -> str:
    """Text as titles are compared: without whitespace, case folded (_fold)."""
    return _fold("".join(char for char in text if not char.isspace()))


@dataclass(frozen=True, slots=True)
class Heading:
    title: str  # as in the outline, on one line
    level: int  # 1 for the outline's top level
    page: int  # 0-based index
    y: float | None  # where the bookmark points on its page, in points from the bottom
    key: str  # the title without its section number, squeezed (_squeeze)


def _title_key(title: str) -> str:
    """The title as it is looked for on its page: squeezed, without a section number of
    its own (which the page may write otherwise, or leave out)."""
    number = _NUMBER.match(title)
    if number is not None and number.end() < len(title) and (
            title[number.end()].isspace() or title[number.end() - 1] in ".:)"):
        return _squeeze(title[number.end():])
    return _squeeze(title)


def _destination_y(dest: Any) -> float | None:
    """The height a destination points at, in points from the bottom of its page."""
    has_x, has_y, has_zoom = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    x, y, zoom = ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
    if pdfium_c.FPDFDest_GetLocationInPage(dest, has_x, has_y, has_zoom, x, y, zoom):
        # /XYZ left top zoom: a null top keeps the reader's position, which says nothing.
        return float(y.value) if has_y.value and math.isfinite(y.value) else None
    mode, view = dest.get_view()
    top: float | None = None
    if mode in (pdfium_c.PDFDEST_VIEW_FITH, pdfium_c.PDFDEST_VIEW_FITBH) and view:
        top = view[0] or None  # pdfium gives a null top as 0
    elif mode == pdfium_c.PDFDEST_VIEW_FITR and len(view) == 4:
        top = view[3]
    return float(top) if top is not None and math.isfinite(top) else None


def read_outline(doc: Any, pages: int) -> list[Heading]:
    """The outline's headings that point at a page, in reading order: by page, then top
    to bottom; one without a height stays after the heading before it in the outline.
    Calls into pdfium: only under ``pdf._PDFIUM``."""
    keyed: list[tuple[int, float, int, Heading]] = []
    last_top: dict[int, float] = {}
    for order, bookmark in enumerate(doc.get_toc()):
        title = clean_line(bookmark.get_title() or "")
        dest = bookmark.get_dest()
        index = dest.get_index() if dest is not None else None
        if not title or index is None or not 0 <= index < pages:
            continue
        y = _destination_y(dest)
        top = y if y is not None else last_top.get(index, math.inf)
        last_top[index] = top
        heading = Heading(title, bookmark.level + 1, index, y, _title_key(title))
        keyed.append((index, -top, order, heading))
    keyed.sort(key=lambda entry: entry[:3])
    return [heading for *_, heading in keyed]


# --- one page -----------------------------------------------------------------------


class _PageText:
    """A page's text as pdfium gives it, and squeezed (_squeeze) to find titles in,
    with the index in the text of each squeezed character."""

    def __init__(self, textpage: Any, text: str) -> None:
        self.textpage = textpage
        self.text = text
        visible = list(map(operator.not_, map(str.isspace, text)))
        self.where = list(itertools.compress(range(len(text)), visible))
        self.squeezed = _fold("".join(itertools.compress(text, visible)))

    def occurrences(self, key: str, start: int) -> Iterator[tuple[int, int]]:
        """The spans of the text, from ``start`` on, whose squeezed form is ``key``."""
        if not key:
            return
        found = self.squeezed.find(key, bisect.bisect_left(self.where, start))
        while found >= 0:
            yield self.where[found], self.where[found + len(key) - 1] + 1
            found = self.squeezed.find(key, found + 1)

    def own_line(self, start: int, begin: int, end: int) -> tuple[int, int] | None:
        """The span of the line(s) a title at ``begin:end`` heads, if nothing else is on
        them but a section number before it (on its line or the line above) and a
        colon or full stop after; none of it before ``start``."""
        text = self.text
        line_start = max(start, text.rfind("\n", 0, begin) + 1)
        before = text[line_start:begin].strip()
        if before and not _NUMBER.fullmatch(before):
            return None
        if not before and line_start > start:  # "CHAPTER 3" on a line of its own above
            above = max(start, text.rfind("\n", 0, line_start - 1) + 1)
            if _NUMBER.fullmatch(text[above:line_start].strip()):
                line_start = above
        line_end = text.find("\n", end)
        line_end = len(text) if line_end < 0 else line_end
        if not set(text[end:line_end].rstrip("\r")) <= _LINE_END:
            return None
        return line_start, line_end

    def is_word(self, begin: int, end: int) -> bool:
        """Whether ``begin:end`` is whole words, not inside longer ones."""
        text = self.text
        return not ((begin > 0 and text[begin - 1].isalnum() and text[begin].isalnum())
                    or (end < len(text) and text[end].isalnum() and text[end - 1].isalnum()))

    def top_at(self, index: int) -> float | None:
        """The top of the first visible character from ``index`` on."""
        visible = VISIBLE.search(self.text, index)
        if visible is None:
            return None
        char = pdfium_c.FPDFText_GetCharIndexFromTextIndex(self.textpage, visible.start())
        box = _char_box(self.textpage, char) if char >= 0 else None
        return box[1] if box is not None else None

    def split_at_height(self, start: int, y: float) -> int:
        """Where the text from ``start`` goes below ``y``: the start of the line holding
        the first character whose middle is under it (the end of the text if none is)."""
        text, textpage = self.text, self.textpage
        first = max(0, pdfium_c.FPDFText_GetCharIndexFromTextIndex(textpage, start))
        for char in range(first, pdfium_c.FPDFText_CountChars(textpage)):
            index = pdfium_c.FPDFText_GetTextIndexFromCharIndex(textpage, char)
            if index < start or index >= len(text) or not VISIBLE.match(text[index]):
                continue
            box = _char_box(textpage, char)
            if box is not None and (box[0] + box[1]) / 2 < y:
                return max(start, text.rfind("\n", start, index) + 1)
        return len(text)

    def locate(self, heading: Heading, start: int) -> tuple[int, int]:
        """Where ``heading`` is from ``start``: the span its own text takes, which the
        body leaves out (empty where it is placed by height alone).

        Its title on a line of its own, not above where the bookmark points; else the
        bookmark's height; else, with no height, its title as words anywhere; else
        ``start``.
        """
        for begin, end in self.occurrences(heading.key, start):
            line = self.own_line(start, begin, end)
            if line is None:
                continue
            top = self.top_at(begin) if heading.y is not None else None
            if heading.y is None or top is None or top <= heading.y + _Y_TOLERANCE:
                return line
        if heading.y is not None:
            split = self.split_at_height(start, heading.y)
            return split, split
        for begin, end in self.occurrences(heading.key, start):
            if self.is_word(begin, end):
                return begin, end
        return start, start


def _char_box(textpage: Any, char: int) -> tuple[float, float] | None:
    """The bottom and top of one character's box, if it has one."""
    left, right = ctypes.c_double(), ctypes.c_double()
    bottom, top = ctypes.c_double(), ctypes.c_double()
    if not pdfium_c.FPDFText_GetCharBox(textpage, char, left, right, bottom, top):
        return None
    return bottom.value, top.value


def page_blocks(textpage: Any, text: str, headings: Sequence[Heading],
                page: int) -> list[Block]:
    """The page's body runs and its headings, in reading order. Calls into pdfium (to
    place headings by height): only under ``pdf._PDFIUM``."""
    blocks: list[Block] = []
    position = 0
    if headings:
        located = _PageText(textpage, text)
        for heading in headings:
            start, end = located.locate(heading, position)
            body = normalize_text(text[position:start])
            if body:
                blocks.append(Block(body, 0, page))
            blocks.append(Block(heading.title, heading.level, page))
            position = max(position, end)
    rest = normalize_text(text[position:])
    if rest:
        blocks.append(Block(rest, 0, page))
    return blocks
