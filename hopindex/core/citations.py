"""Where a passage came from: its file, page (or page range) and section.

Readers of structured files (PDF, HTML, DOCX, Markdown) record each document's
layout under ``metadata["hopindex"]``: the file, the section the document is, its
pages, and the offsets in its text where each page and each subsection starts. A
span of the text (a chunk) is cited from that, here, for every method alike; a
document read from JSON records has no layout and no citation.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The key of a document's metadata that holds hopindex's own fields; every other key
# is the user's and is stored as given.
RESERVED_METADATA_KEY = "hopindex"
# Between the headings of a section path: "Methods > Data".
SECTION_SEPARATOR = " > "


@dataclass(frozen=True, slots=True)
class Citation:
    """A passage's place in its file; each part None when the format has none."""

    file: str
    page: int | None = None
    page_end: int | None = None  # the last page when the passage spans several
    section: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "page": self.page, "page_end": self.page_end,
                "section": self.section}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Citation:
        page, page_end, section = data.get("page"), data.get("page_end"), data.get("section")
        return cls(file=str(data["file"]), page=None if page is None else int(page),
                   page_end=None if page_end is None else int(page_end),
                   section=None if section is None else str(section))

    def label(self) -> str:
        """``report.pdf, p. 3-4, § Methods > Data``: what a person checks the passage by."""
        parts = [self.file]
        if self.page is not None:
            pages = (f"{self.page}-{self.page_end}"
                     if self.page_end is not None and self.page_end != self.page
                     else str(self.page))
            parts.append(f"p. {pages}")
        if self.section:
            parts.append(f"§ {self.section}")
        return ", ".join(parts)


def layout_of(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A document's layout, when a structured-file reader recorded one."""
    own = metadata.get(RESERVED_METADATA_KEY)
    if isinstance(own, Mapping) and isinstance(own.get("file"), str):
        return own
    return None


def cite_span(layout: Mapping[str, Any], start: int, end: int) -> Citation:
    """The citation of ``text[start:end]`` of a document with ``layout``."""
    pages = _marks(layout.get("page_starts"))
    page = page_end = None
    if pages:
        page = _at(pages, start)
        page_end = _at(pages, max(start, end - 1))
    elif isinstance(layout.get("pages"), Sequence) and len(layout["pages"]) == 2:
        page, page_end = (int(p) for p in layout["pages"])
    outline = _marks(layout.get("outline"))
    section = _at(outline, start, before_first=None) if outline else None
    if section is None:
        section = layout.get("section") or None
    return Citation(file=str(layout["file"]), page=None if page is None else int(page),
                    page_end=None if page_end is None else int(page_end),
                    section=None if section is None else str(section))


def cite_text(layout: Mapping[str, Any], document_text: str, passage: str,
              title: str = "", *, search_from: int = 0) -> tuple[Citation, int]:
    """The citation of a passage shown from a document, and where its body starts: the
    body (a passage unit is ``title\\nbody``, a chunk of the document) is found in the
    text, from ``search_from`` first; one not found is cited as the whole document."""
    body = passage[len(title) + 1:] if title and passage.startswith(title + "\n") else passage
    body = body.strip()
    start = document_text.find(body, search_from) if body else -1
    if start < 0 and search_from:
        start = document_text.find(body)
    if start < 0:
        return cite_span(layout, 0, len(document_text)), search_from
    return cite_span(layout, start, start + len(body)), start


class PassageCiter:
    """Cites a document's passages in order: each is looked for after the previous
    one's start (chunks come in order and overlap), so a long document is scanned
    about once, not once per chunk."""

    def __init__(self, document_metadata: Mapping[str, Any], document_text: str,
                 title: str = "") -> None:
        layout = layout_of(document_metadata)
        # Marks parsed once, not once per passage: a long file has thousands of pages.
        self._layout = None if layout is None else {
            **layout, "page_starts": _marks(layout.get("page_starts")),
            "outline": _marks(layout.get("outline"))}
        self._text = document_text
        self._title = title
        self._cursor = 0

    def metadata_for(self, passage: str) -> dict[str, Any]:
        """``{"hopindex": citation}`` for the passage; empty for a document read from
        records (no layout)."""
        if self._layout is None:
            return {}
        citation, self._cursor = cite_text(self._layout, self._text, passage, self._title,
                                           search_from=self._cursor)
        return {RESERVED_METADATA_KEY: citation.as_dict()}


def passage_citation(unit_metadata: Mapping[str, Any]) -> Citation | None:
    """The citation a passage unit carries (``PassageCiter`` wrote it), if any."""
    own = unit_metadata.get(RESERVED_METADATA_KEY)
    if isinstance(own, Mapping) and isinstance(own.get("file"), str):
        return Citation.from_dict(own)
    return None


def document_citation(document_metadata: Mapping[str, Any], text_length: int
                      ) -> Citation | None:
    """A whole document's citation (shown when a method keeps no passage units)."""
    layout = layout_of(document_metadata)
    return None if layout is None else cite_span(layout, 0, text_length)


def section_breaks(document_metadata: Mapping[str, Any]) -> list[int]:
    """Offsets in a document's text where a subsection starts, for chunking to cut at."""
    layout = layout_of(document_metadata)
    if layout is None:
        return []
    return sorted({offset for offset, _ in _marks(layout.get("outline")) if offset > 0})


class _Marks(tuple[tuple[int, Any], ...]):
    """[offset, value] marks parsed and sorted by offset."""


def _marks(raw: Any) -> _Marks:
    if isinstance(raw, _Marks):
        return raw
    if not isinstance(raw, Sequence):
        return _Marks()
    marks = [(int(mark[0]), mark[1]) for mark in raw
             if isinstance(mark, Sequence) and len(mark) == 2]
    return _Marks(sorted(marks, key=lambda mark: mark[0]))


_FIRST = object()


def _at(marks: Sequence[tuple[int, Any]], offset: int, before_first: Any = _FIRST) -> Any:
    """The value of the last mark at or before ``offset``; before every mark, the first
    mark's (a page: the text before it is on it) or ``before_first``."""
    position = bisect.bisect_right(marks, offset, key=lambda mark: mark[0]) - 1
    if position < 0 and before_first is not _FIRST:
        return before_first
    return marks[max(position, 0)][1]
