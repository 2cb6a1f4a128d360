"""What a caller and the settings choose about reading files: how structured files
split into documents (``SplitBy``), which files of a folder are read (``Reading``),
and each file's limits (``FileLimits``).

Apart from the parsers (``files/``) and the record readers (``base.py``), which both
read these, so that neither imports the other.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fnmatch import fnmatchcase


class SplitBy(enum.Enum):
    """How a structured file becomes documents (``--split-by``)."""

    # One document per top-level section; a file without headings is one document.
    SECTION = "section"
    # The whole file is one document (chunked like any long document).
    FILE = "file"
    # One document per page; a format without pages (HTML, DOCX, Markdown) is one.
    PAGE = "page"


@dataclass(frozen=True, slots=True)
class Reading:
    """What a caller chooses about reading files: how structured files split into
    documents, and which files of a folder are read (globs on the path inside the
    folder, ``*`` crossing folders; no include: every file)."""

    split_by: SplitBy = SplitBy.SECTION
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def selects(self, relative: str) -> bool:
        """Whether a folder's file at ``relative`` (a POSIX path inside it) is read."""
        if self.include and not any(fnmatchcase(relative, p) for p in self.include):
            return False
        return not any(fnmatchcase(relative, p) for p in self.exclude)

    def as_params(self) -> dict[str, str]:
        """What the ingest route takes of the choices, as query parameters: how files
        split (the files sent are already the ones ``include``/``exclude`` select)."""
        if self.split_by is SplitBy.SECTION:
            return {}
        return {"split_by": self.split_by.value}


@dataclass(frozen=True, slots=True)
class FileLimits:
    """Per-file limits, apart from the per-document ``max_document_bytes``."""

    # Bytes of the file as stored, checked before it is parsed.
    max_file_bytes: int = 100_000_000
    # An HTML page's parse takes 26-47 times its size in memory (BENCHMARKS.md), so a
    # page has its own, lower cap: a 20 MB page parses in under 1 GB.
    max_html_bytes: int = 20_000_000
    # Pages of a PDF: a 1,000-page manual reads in bounded memory, 5,000 is the cap.
    max_pages: int = 5_000
    # A DOCX is a zip: its members' expanded size over its stored size, and in all.
    max_zip_ratio: int = 100
    max_zip_expanded_bytes: int = 500_000_000


# The environment variables that set FileLimits, named in refusals: what a user can change.
FILE_LIMIT_VARIABLES = {
    "max_file_bytes": "HOPINDEX_MAX_FILE_BYTES",
    "max_html_bytes": "HOPINDEX_MAX_HTML_BYTES",
    "max_pages": "HOPINDEX_MAX_FILE_PAGES",
    "max_zip_ratio": "HOPINDEX_MAX_ZIP_RATIO",
    "max_zip_expanded_bytes": "HOPINDEX_MAX_ZIP_EXPANDED_BYTES",
}
