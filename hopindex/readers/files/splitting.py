"""A parsed file's blocks into documents: one per top-level section, page, or file.

Multi-hop retrieval works across documents (bridges, titles named in other texts),
so a long file is not one document: by default each top-level section is one, titled
by its heading, with the id ``path#section-slug``. Ids depend only on the file's path
and its headings, so a file ingested again maps onto the same documents.

Each document's ``layout`` records where its text came from (file, format, section,
pages, and the offsets where pages and subsections start in its text), which the
citations of its passages are computed from (core/citations.py).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from hopindex.core.citations import SECTION_SEPARATOR
from hopindex.readers.base import RawDocument, ReadError, ReadOptions
from hopindex.readers.files.model import PageProblem, ParsedFile
from hopindex.readers.options import SplitBy

_NOT_WORD = re.compile(r"[^\w]+")
_MAX_SLUG_CHARS = 80


def slugify(heading: str) -> str:
    """``Results and Discussion`` → ``results-and-discussion``; letters of any script kept."""
    slug = _NOT_WORD.sub("-", heading.casefold()).strip("-_")[:_MAX_SLUG_CHARS].strip("-_")
    return slug or "section"


@dataclass(slots=True)
class _Draft:
    """A document being assembled from blocks."""

    doc_id: str
    title: str
    section: str
    parts: list[str] = field(default_factory=list)
    length: int = 0
    pages: list[list[int]] = field(default_factory=list)  # [offset, page] where a page starts
    outline: list[list[Any]] = field(default_factory=list)  # [offset, "A > B"] per heading

    def add(self, text: str, page: int | None, heading_path: str | None = None) -> None:
        offset = self.length + (2 if self.parts else 0)  # parts are joined by a blank line
        if page is not None and (not self.pages or self.pages[-1][1] != page):
            self.pages.append([offset, page])
        if heading_path is not None:
            if self.outline and self.outline[-1][0] == offset:
                self.outline.pop()  # a heading right where the page opened a section
            self.outline.append([offset, heading_path])
        self.parts.append(text)
        self.length = offset + len(text)

    def continue_page(self, page: int | None) -> None:
        """A document that starts mid-page starts on that page."""
        if page is not None and not self.pages:
            self.pages.append([0, page])


@dataclass(frozen=True, slots=True)
class FileFacts:
    """What every document of one file records about it."""

    relative: str  # the id's base: the path inside the folder named, or the file's name
    origin: str
    sha256: str


def split_file(parsed: ParsedFile, facts: FileFacts, split_by: SplitBy,
               options: ReadOptions) -> Iterator[RawDocument | ReadError]:
    """The file's documents, in order, after its page problems; raises what reading the
    blocks raises (UnreadableFileError), before yielding any document, so that a file
    that fails part-way gives none: it would replace the complete one indexed."""
    documents: list[_Draft] = []
    problems: list[ReadError] = []
    file_title = parsed.title or PurePosixPath(facts.relative).stem
    title_heading, split_level = _split_plan(parsed.heading_levels)
    slugs: Counter[str] = Counter()
    used: set[str] = set()
    current = _Draft(doc_id=facts.relative, title=file_title, section="")
    documents.append(current)
    stack: list[tuple[int, str]] = []  # the headings above the text being read
    last_page: int | None = None
    first_heading = True
    for item in parsed.blocks:
        if isinstance(item, PageProblem):
            problems.append(ReadError(f"{facts.origin}:page {item.page}", item.reason))
            continue
        if split_by is SplitBy.PAGE and item.page is not None and item.page != last_page:
            current = _Draft(doc_id=f"{facts.relative}#page-{item.page}",
                             title=f"{file_title}, page {item.page}", section="")
            if stack:  # the page opens inside the section a page before it began
                current.outline.append([0, SECTION_SEPARATOR.join(t for _, t in stack)])
            documents.append(current)
        last_page = item.page if item.page is not None else last_page
        if not item.is_heading:
            current.add(item.text, item.page)
            continue
        opens_file = first_heading and not current.parts
        first_heading = False
        if opens_file and title_heading and split_by is not SplitBy.PAGE:
            current.title = item.text  # the file's own title, not a section of it
            continue
        while stack and stack[-1][0] >= item.heading_level:
            stack.pop()
        stack.append((item.heading_level, item.text))
        path = SECTION_SEPARATOR.join(text for _, text in stack)
        if (split_by is SplitBy.SECTION and split_level is not None
                and item.heading_level <= split_level):
            base = slug = slugify(item.text)
            slugs[base] += 1
            if slugs[base] > 1:
                slug = f"{base}-{slugs[base]}"
            while slug in used:  # a heading may itself read "x-2": two ids would clash
                slugs[base] += 1
                slug = f"{base}-{slugs[base]}"
            used.add(slug)
            current = _Draft(doc_id=f"{facts.relative}#{slug}", title=item.text, section=path)
            current.continue_page(item.page)
            documents.append(current)
            current.outline.append([0, path])
            continue
        current.add(item.text, item.page, heading_path=path)
    yield from problems
    yield from _finished(documents, parsed, facts, split_by, options, partial=bool(problems))


def _split_plan(levels: tuple[int, ...]) -> tuple[bool, int | None]:
    """Whether the first heading is the file's title, and the level sections split at.

    A top-level heading that opens the file and occurs once (a Markdown ``# Title``
    over ``##`` sections) names the file; the sections are the next level down, and a
    file with no other heading is one document. Otherwise the top level present is
    the split level.
    """
    if not levels:
        return False, None
    top = min(levels)
    counts = Counter(levels)
    if levels[0] == top and counts[top] == 1:
        return True, min(levels[1:]) if len(levels) > 1 else None
    return False, top


def _finished(drafts: list[_Draft], parsed: ParsedFile, facts: FileFacts, split_by: SplitBy,
              options: ReadOptions, *, partial: bool) -> Iterator[RawDocument | ReadError]:
    """The drafts as documents, or as errors when over the size limit. ``partial``: a
    page of the file gave no text; then, as when a section is refused, the documents
    say the file was read in part (``file_complete``: false), so that a document of
    the file the index holds and this reading lacks is kept, not taken for a section
    deleted from the file (scheduler/file_documents.py)."""
    texts = [(draft, "\n\n".join(draft.parts)) for draft in drafts]
    # A heading with nothing under it, or a file's empty preamble, is no document.
    texts = [(draft, text) for draft, text in texts if text.strip()]
    sizes = [len(text.encode("utf-8")) for _, text in texts]
    refused = sum(1 for size in sizes if size > options.max_document_bytes)
    complete = not partial and not refused
    for (draft, text), size in zip(texts, sizes, strict=True):
        if size > options.max_document_bytes:
            yield ReadError(facts.origin + draft.doc_id[len(facts.relative):],
                            f"document {draft.doc_id!r} is {size:,} bytes of UTF-8 text, "
                            f"{options.over_limit()}{_smaller_hint(parsed, split_by)}")
            continue
        yield RawDocument(doc_id=draft.doc_id, title=draft.title, text=text, metadata={},
                          origin=facts.origin,
                          layout=_layout(draft, parsed, facts, complete=complete))
    if not texts:
        yield ReadError(facts.origin, "document text is empty")


def _smaller_hint(parsed: ParsedFile, split_by: SplitBy) -> str:
    if parsed.heading_levels and split_by is SplitBy.FILE:
        return "; --split-by section makes one document per section"
    if parsed.pages and split_by is not SplitBy.PAGE:
        return "; --split-by page makes one document per page"
    return ""


def _layout(draft: _Draft, parsed: ParsedFile, facts: FileFacts, *, complete: bool
            ) -> dict[str, Any]:
    layout: dict[str, Any] = {"file": facts.relative, "format": parsed.format_name,
                              "file_sha256": facts.sha256}
    if not complete:
        layout["file_complete"] = False
    if draft.section:
        layout["section"] = draft.section
    if draft.pages:
        layout["pages"] = [draft.pages[0][1], draft.pages[-1][1]]
        layout["page_starts"] = draft.pages
    if draft.outline:
        layout["outline"] = draft.outline
    return layout
