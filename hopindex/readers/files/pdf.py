"""PDF: the text layer page by page through pdfium (pypdfium2), headings from the outline.

pdfium reads the file in place: one page and its text are loaded at a time and closed
before the next, so a 1,000-page manual reads in bounded memory.

Headings come from the outline (bookmarks) alone. A PDF without an outline has no
headings, and is one document (or one per page with ``--split-by page``); guessing
headings from font sizes is out of scope. Reading the outline, placing each heading in
its page's text and normalising that text are in ``pdf_layout``; this module opens the
file, holds the pdfium lock around every call into pdfium (those made there included),
turns pdfium's failures into ``UnreadableFileError`` and walks the pages.

A page without text is a ``PageProblem`` when it holds an image (a scan: OCR is not
supported) and is skipped when blank; a file none of whose pages has text is refused.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pypdfium2 as pdfium  # type: ignore[import-untyped]
import pypdfium2.raw as pdfium_c  # type: ignore[import-untyped]

from hopindex.readers.files.model import (
    Block,
    FileInput,
    PageProblem,
    ParsedFile,
    UnreadableFileError,
)
from hopindex.readers.files.pdf_layout import (
    VISIBLE,
    Heading,
    clean_line,
    page_blocks,
    read_outline,
)
from hopindex.readers.options import FILE_LIMIT_VARIABLES, FileLimits

ENCRYPTED = "encrypted PDF: remove its password to ingest it"
NO_TEXT_LAYER = "no text layer — scanned? OCR is not supported"
_CORRUPT = "not a readable PDF (corrupt or truncated)"

# pdfium is not thread-safe: every call into it, from any PDF being read, holds this
# lock, those made in pdf_layout too (they run only inside the ``with _PDFIUM`` blocks
# here). It is never held across a ``yield``, so two files read in turn in one thread
# (or in two) interleave page by page. Reentrant: a file's blocks dropped unfinished
# may be collected, and close their document, while this thread reads another PDF.
_PDFIUM = threading.RLock()

# pdfium's reasons for a document it could not open (FPDF_GetLastError), as users read them.
_LOAD_ERRORS = {
    pdfium_c.FPDF_ERR_UNKNOWN: "unknown error",
    pdfium_c.FPDF_ERR_FILE: "the file could not be read",
    pdfium_c.FPDF_ERR_FORMAT: "not in PDF format or damaged",
    pdfium_c.FPDF_ERR_PAGE: "a page is missing or damaged",
}

# --- one page -----------------------------------------------------------------------


def _has_image(page: Any) -> bool:
    """Whether the page holds an image, in itself or in a form XObject it draws."""
    images = page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE])
    try:
        return next(images, None) is not None
    finally:
        images.close()


def _read_page(doc: Any, index: int, headings: Sequence[Heading]
               ) -> tuple[list[Block | PageProblem], bool]:
    """One page's blocks (a ``PageProblem`` for a scanned page), and whether it has text.
    The page and its text are closed before this returns."""
    page = doc.get_page(index)
    try:
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_range()
            has_text = VISIBLE.search(text) is not None
            items: list[Block | PageProblem] = [
                *page_blocks(textpage, text if has_text else "", headings, index + 1)]
        finally:
            textpage.close()
        if not has_text and _has_image(page):
            items.append(PageProblem(index + 1, NO_TEXT_LAYER))
        return items, has_text
    finally:
        page.close()


# --- the file -----------------------------------------------------------------------


def _reason(error: BaseException) -> str:
    """pdfium's reason for a failure, short."""
    code = getattr(error, "err_code", None)
    if code in _LOAD_ERRORS:
        return _LOAD_ERRORS[code]
    reason = " ".join(str(error).split()).rstrip(".") or type(error).__name__
    reason = reason[:1].lower() + reason[1:]
    return reason if len(reason) <= 120 else reason[:119] + "…"


def _open(file: FileInput) -> Any:
    try:
        return pdfium.PdfDocument(file.path)
    except pdfium.PdfiumError as error:
        code = getattr(error, "err_code", None)
        if code == pdfium_c.FPDF_ERR_PASSWORD or "password" in str(error).lower():
            raise UnreadableFileError(ENCRYPTED) from error
        if code == pdfium_c.FPDF_ERR_SECURITY:
            raise UnreadableFileError("encrypted PDF with an unsupported security handler: "
                                      "remove its encryption to ingest it") from error
        if code == pdfium_c.FPDF_ERR_SUCCESS:  # it opened, and has no page
            raise UnreadableFileError("a PDF without pages") from error
        raise UnreadableFileError(f"{_CORRUPT}: {_reason(error)}") from error
    except OSError as error:
        raise UnreadableFileError(f"cannot open the file: {error.strerror or error}") from error


def _metadata_title(doc: Any) -> str | None:
    return clean_line(doc.get_metadata_value("Title") or "") or None


def parse_pdf(file: FileInput, limits: FileLimits) -> ParsedFile:
    """A PDF's title (its metadata's), its outline's headings and its text, page by page.

    Raises ``UnreadableFileError`` for an encrypted, corrupt or truncated file, or one of
    more than ``limits.max_pages`` pages; its blocks raise it for a page that cannot be
    read, and at the end for a file with no text on any page but scans.
    """
    with _PDFIUM:
        doc = _open(file)
        try:
            pages = len(doc)
            if pages > limits.max_pages:
                raise UnreadableFileError(
                    f"{pages:,} pages, over the {limits.max_pages:,}-page limit "
                    f"({FILE_LIMIT_VARIABLES['max_pages']})")
            try:
                title = _metadata_title(doc)
                headings = read_outline(doc, pages)
            except MemoryError:
                raise
            except Exception as error:  # whatever pdfium or its wrapper raised
                raise UnreadableFileError(f"{_CORRUPT}: {_reason(error)}") from error
        except BaseException:
            doc.close()
            raise
    return ParsedFile(title=title, heading_levels=tuple(h.level for h in headings),
                      blocks=_blocks(doc, headings, pages), pages=pages, format_name="PDF")


def _blocks(doc: Any, headings: list[Heading], pages: int) -> Iterator[Block | PageProblem]:
    """The pages' blocks in order; the document is closed when they end or are closed.

    Until a page gives text, what the pages before it gave (their problems, headings)
    is held back: a file with no text at all is refused whole instead.
    """
    try:
        by_page: dict[int, list[Heading]] = {}
        for heading in headings:
            by_page.setdefault(heading.page, []).append(heading)
        held: list[Block | PageProblem] = []
        any_text = False
        for index in range(pages):
            with _PDFIUM:
                try:
                    items, has_text = _read_page(doc, index, by_page.get(index, ()))
                except MemoryError:
                    raise
                except Exception as error:  # whatever pdfium or its wrapper raised
                    raise UnreadableFileError(f"{_CORRUPT}: {_reason(error)}",
                                              page=index + 1) from error
            if any_text:
                yield from items
                continue
            held.extend(items)
            if has_text:
                any_text = True
                yield from held
                held = []
        if not any_text:
            if any(isinstance(item, PageProblem) for item in held):
                where = f"any of its {pages:,} pages" if pages > 1 else "its page"
                raise UnreadableFileError(
                    f"no text layer on {where} — scanned? OCR is not supported")
            yield from held  # blank pages: the outline's headings, if any
    finally:
        with _PDFIUM:
            doc.close()
