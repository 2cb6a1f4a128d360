"""What a document-format parser gives the splitter: the file's blocks in reading order.

A parser (one module per format in this folder) turns a file into a ``ParsedFile``:
its own title, the levels of its headings (known before the text, so the splitter
can choose the level it splits at), and an iterator of ``Block``s read lazily, page
by page or section by section, so a long file is never whole in memory twice.

A problem with the whole file (encrypted, corrupt, over a limit) is an
``UnreadableFileError``, raised by the parser or while its blocks are read; the
file then fails alone and none of its documents is kept, since a partial file would
replace the complete one already indexed. A problem with one page (no text layer)
is a ``PageProblem`` among the blocks: that page is reported and the rest goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hopindex.core.errors import InvalidInputError
from hopindex.readers.options import FileLimits


class UnreadableFileError(InvalidInputError):
    """The whole file cannot be read: its reason names the page when one is to blame."""

    def __init__(self, reason: str, *, page: int | None = None) -> None:
        self.reason = reason
        self.page = page
        super().__init__(f"page {page}: {reason}" if page is not None else reason)


@dataclass(frozen=True, slots=True)
class Block:
    """A heading, or a run of body text (a paragraph, a list, a table as text rows).

    ``heading_level`` is 1 for the top level, 2 below it, and so on; 0 for body text.
    ``page`` is the 1-based page the block is on, for formats with pages (PDF).
    """

    text: str
    heading_level: int = 0
    page: int | None = None

    @property
    def is_heading(self) -> bool:
        return self.heading_level > 0


@dataclass(frozen=True, slots=True)
class PageProblem:
    """One page that gave no text, and why; the other pages go on."""

    page: int
    reason: str


@dataclass(slots=True)
class ParsedFile:
    """A file as its parser reads it. ``heading_levels`` lists the level of every heading
    the blocks will hold, in order; ``pages`` is the page count of a paged format."""

    title: str | None
    heading_levels: tuple[int, ...]
    blocks: Iterator[Block | PageProblem]
    pages: int | None = None
    # The format's name as users know it: "PDF", "HTML", "DOCX", "Markdown", "text".
    format_name: str = ""


# A parser: the file's path (opened as it likes: a PDF is read in place, page by page)
# and the limits, to its ParsedFile. It raises UnreadableFileError for the whole file.
Parser = Callable[["FileInput", FileLimits], ParsedFile]


@dataclass(frozen=True, slots=True)
class FileInput:
    """The file to parse: where it is, its name in messages, and its first bytes."""

    path: Path
    origin: str
    head: bytes

