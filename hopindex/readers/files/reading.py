"""A document file into documents: its format sniffed, its parser run, its blocks split.

One parser module per format, chosen by the file's content (magic bytes) before its
name, so a PDF saved as ``report.txt`` or an HTML page named ``.md`` is still read as
what it is. A parser gives blocks (model.py); ``splitting.py`` makes documents of them.
Parsers are imported on first use: a PDF library loads only when a PDF is read.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterator
from importlib import import_module
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from hopindex.core.text import unstorable_field
from hopindex.readers.base import Item, ReadError, ReadOptions, Source
from hopindex.readers.files.model import FileInput, Parser, UnreadableFileError
from hopindex.readers.files.splitting import FileFacts, split_file
from hopindex.readers.options import FILE_LIMIT_VARIABLES

if TYPE_CHECKING:
    from pathlib import Path

HEAD_BYTES = 8192
# A text file may exceed the document limit by the space its text is stripped of.
_TEXT_SLACK_BYTES = 64 * 1024
_HASH_CHUNK = 1 << 20


class FileFormat(enum.Enum):
    PDF = "pdf"
    DOCX = "docx"
    HTML = "html"
    MARKDOWN = "markdown"
    TEXT = "text"


# module, function: imported when a file of the format is first read.
_PARSERS: dict[FileFormat, tuple[str, str]] = {
    FileFormat.PDF: ("hopindex.readers.files.pdf", "parse_pdf"),
    FileFormat.DOCX: ("hopindex.readers.files.docx", "parse_docx"),
    FileFormat.HTML: ("hopindex.readers.files.html", "parse_html"),
    FileFormat.MARKDOWN: ("hopindex.readers.files.markdown", "parse_markdown"),
    FileFormat.TEXT: ("hopindex.readers.files.markdown", "parse_plain_text"),
}

# The names a format is also known by, for the suffix fallback.
SUFFIXES: dict[str, FileFormat] = {
    ".pdf": FileFormat.PDF, ".docx": FileFormat.DOCX, ".html": FileFormat.HTML,
    ".htm": FileFormat.HTML, ".xhtml": FileFormat.HTML, ".md": FileFormat.MARKDOWN,
    ".markdown": FileFormat.MARKDOWN, ".txt": FileFormat.TEXT,
}

_ZIP = b"PK\x03\x04"
_OLE = bytes.fromhex("D0CF11E0A1B11AE1")
# What other content is, for the message refusing it.
_OTHER_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"), (b"\x1f\x8b", "gzip-compressed data"),
    (b"\x7fELF", "an executable"), (_ZIP, "a zip archive that is not a Word document"),
    (_OLE, "an old Office file (Word 97-2003 .doc or similar): save it as .docx"),
    (b"Rar!", "a RAR archive"), (b"7z\xbc\xaf", "a 7-Zip archive"),
)
_HTML_OPENERS = (b"<!doctype html", b"<html", b"<head", b"<body")


def sniff_format(head: bytes, suffix: str) -> FileFormat | None:
    """The document format the first bytes say; the suffix only where they cannot
    tell (Markdown from text) or agree (an OLE file named ``.docx`` is a DOCX the
    DOCX parser then refuses, with the reason)."""
    if b"%PDF-" in head[:1024]:  # the header may follow junk bytes, as readers allow
        return FileFormat.PDF
    if head.startswith(_ZIP) and (suffix == ".docx" or b"word/" in head):
        return FileFormat.DOCX
    if head.startswith(_OLE) and suffix == ".docx":
        return FileFormat.DOCX
    if _looks_like_html(head):
        return FileFormat.HTML
    by_name = SUFFIXES.get(suffix)
    if by_name in (FileFormat.PDF, FileFormat.DOCX):
        return None  # named so, but not so inside: refused as what the bytes are
    return by_name


def describe_content(head: bytes) -> str:
    """What unreadable content is, as far as its first bytes tell."""
    for magic, name in _OTHER_MAGIC:
        if head.startswith(magic):
            return name
    if b"\x00" in head:
        return "binary data of an unknown format"
    return "text in no format hopindex reads"


def _looks_like_html(head: bytes) -> bool:
    text = head[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16: look at every other byte
        text = text[2:].replace(b"\x00", b"").lstrip()
    if text.startswith(_HTML_OPENERS):
        return True
    # A comment or an XML declaration may come first.
    return text.startswith((b"<!--", b"<?xml")) and any(o in text for o in _HTML_OPENERS)


def read_document_file(source: Source, options: ReadOptions, file_format: FileFormat,
                       head: bytes) -> Iterator[Item]:
    """The documents of one file, or the errors that say why it (or a page) failed."""
    refused = _refusal(source, options, file_format)
    if refused is not None:
        yield refused
        return
    try:
        facts = FileFacts(relative=source.relative, origin=source.origin,
                          sha256=_sha256(source.path))
        parsed = _parser(file_format)(FileInput(source.path, source.origin, head),
                                      options.file_limits)
        items = list(split_file(parsed, facts, options.reading.split_by, options))
    except UnreadableFileError as exc:
        where = source.origin if exc.page is None else f"{source.origin}:page {exc.page}"
        yield ReadError(where, exc.reason)
        return
    except OSError as exc:
        yield ReadError(source.origin, f"cannot read: {exc.strerror or exc}")
        return
    except Exception as exc:
        # A parser library's own failure on a file it cannot handle: that file fails,
        # named, and the rest of the ingest goes on.
        yield ReadError(source.origin, f"cannot read this {file_format.value} file "
                                       f"({type(exc).__name__}: {exc})")
        return
    yield from items


def _refusal(source: Source, options: ReadOptions, file_format: FileFormat
             ) -> ReadError | None:
    """Why the file is refused before it is parsed (a name no store keeps, a size over
    a limit), if it is."""
    try:
        size = source.path.stat().st_size
    except OSError as exc:
        return ReadError(source.origin, f"cannot read: {exc.strerror or exc}")
    unstorable = unstorable_field([("id", source.relative),
                                   ("title", PurePosixPath(source.relative).stem)])
    if unstorable is not None:
        return ReadError(f"{source.origin}:{unstorable.field}",
                         f"{unstorable}: the id and title come from the file's name, which "
                         "is not valid UTF-8; rename the file")
    if file_format is FileFormat.TEXT and size > options.max_document_bytes + _TEXT_SLACK_BYTES:
        # Plain text is one document: one far over the document limit is refused unread.
        return ReadError(source.origin, f"document {source.relative!r} is {size:,} bytes, "
                                        f"{options.over_limit()}")
    limits = options.file_limits
    limit_name = "max_html_bytes" if file_format is FileFormat.HTML else "max_file_bytes"
    limit = getattr(limits, limit_name)
    if size > limit:
        what = "an HTML file" if file_format is FileFormat.HTML else "a file"
        return ReadError(source.origin, f"file is {size:,} bytes, over the {limit:,}-byte "
                                        f"limit for {what} ({FILE_LIMIT_VARIABLES[limit_name]})")
    return None


def _parser(file_format: FileFormat) -> Parser:
    module, name = _PARSERS[file_format]
    parser: Parser = getattr(import_module(module), name)
    return parser


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
