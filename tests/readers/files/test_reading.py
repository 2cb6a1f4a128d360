"""Document files through ``read_paths``: the format sniffed from the bytes before the
name, folders filtered by include/exclude globs, size limits refused with the variable
that sets them, a parser's failure confined to its file, and each document's layout."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from fpdf import FPDF

from hopindex.readers import (
    FileLimits,
    RawDocument,
    Reading,
    ReadOptions,
    ReadResult,
    read_paths,
)
from hopindex.readers.base import ReadError
from hopindex.readers.files.model import FileInput, ParsedFile, UnreadableFileError
from hopindex.readers.files.reading import FileFormat, describe_content, sniff_format

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(20)
OLE = bytes.fromhex("D0CF11E0A1B11AE1") + bytes(100)
HTML = (b"<!DOCTYPE html><html><head><title>Page</title></head><body><main>"
        b"<h1>Harbour</h1><p>The harbour opened in 1850 and still serves ferries.</p>"
        b"</main></body></html>")


def pdf_bytes(text: str = "The mill stood by the river for two hundred years.") -> bytes:
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    pdf.multi_cell(0, 6, text)
    return bytes(pdf.output())


def read(*paths: Path, options: ReadOptions | None = None) -> ReadResult:
    return read_paths(list(paths), options=options)


def only_document(result: ReadResult) -> RawDocument:
    assert result.errors == []
    assert len(result.documents) == 1, result.documents
    return result.documents[0]


def only_error(result: ReadResult) -> ReadError:
    assert result.documents == []
    assert len(result.errors) == 1, result.errors
    return result.errors[0]


def layout(document: RawDocument) -> dict[str, object]:
    assert document.layout is not None
    return document.layout


# --- sniffing --------------------------------------------------------------------------


@pytest.mark.parametrize(("head", "suffix", "expected"), [
    (b"%PDF-1.7\n", ".txt", FileFormat.PDF),
    (b"\x00junk before the header " * 10 + b"%PDF-1.4\n", "", FileFormat.PDF),
    (b"PK\x03\x04" + bytes(26) + b"word/document.xml", ".zip", FileFormat.DOCX),
    (b"PK\x03\x04" + bytes(26) + b"content.xml", ".docx", FileFormat.DOCX),
    (OLE, ".docx", FileFormat.DOCX),
    (b"<!doctype html><p>x", ".md", FileFormat.HTML),
    (b"\xef\xbb\xbf\n  <HTML lang='en'>", ".txt", FileFormat.HTML),
    ("\ufeff<html><body>x".encode("utf-16-le"), ".txt", FileFormat.HTML),
    ("\ufeff<html><body>x".encode("utf-16-be"), "", FileFormat.HTML),
    (b"<!-- saved page -->\n<html>", ".txt", FileFormat.HTML),
    (b'<?xml version="1.0"?>\n<!DOCTYPE html>', "", FileFormat.HTML),
    (b"# Heading\n\ntext", ".md", FileFormat.MARKDOWN),
    (b"# Heading\n\ntext", ".txt", FileFormat.TEXT),
    (b"<!-- a comment, then markdown -->\n# Heading", ".md", FileFormat.MARKDOWN),
])
def test_sniff_format_reads_the_bytes_before_the_name(head: bytes, suffix: str,
                                                      expected: FileFormat) -> None:
    """Magic bytes decide (a PDF header anywhere in the first KB, a Word zip, an HTML
    opener after a BOM or comment, UTF-16 included); the suffix only tells Markdown
    from text."""
    assert sniff_format(head, suffix) is expected


@pytest.mark.parametrize(("head", "suffix"), [
    (b"just some text", ".pdf"),
    (b"just some text", ".docx"),
    (b"PK\x03\x04" + bytes(40), ".zip"),
    (OLE, ".doc"),
    (PNG, ".png"),
    (b"x" * 1024 + b"%PDF-1.4", ".bin"),
])
def test_sniff_format_refuses_what_the_bytes_are_not(head: bytes, suffix: str) -> None:
    """A file named .pdf or .docx whose bytes are not one, a plain zip, an old Office
    file not named .docx, and a PDF header past the first KB are no document format."""
    assert sniff_format(head, suffix) is None


@pytest.mark.parametrize(("head", "described"), [
    (PNG, "a PNG image"),
    (b"\xff\xd8\xff\xe0", "a JPEG image"),
    (b"PK\x03\x04", "a zip archive that is not a Word document"),
    (OLE, "an old Office file (Word 97-2003 .doc or similar): save it as .docx"),
    (b"\x01\x02\x00\x03", "binary data of an unknown format"),
    (b"plain words", "text in no format hopindex reads"),
])
def test_describe_content_names_what_unreadable_bytes_are(head: bytes, described: str) -> None:
    """The refusal of an unreadable file says what its bytes hold."""
    assert describe_content(head) == described


def test_pdf_bytes_named_txt_are_read_as_pdf(tmp_path: Path) -> None:
    """A PDF saved as ``report.txt`` is parsed as a PDF, not read as text."""
    path = tmp_path / "report.txt"
    path.write_bytes(pdf_bytes())
    document = only_document(read(path))
    assert "two hundred years" in document.text
    assert layout(document)["format"] == "PDF"
    assert layout(document)["pages"] == [1, 1]


def test_html_named_md_is_read_as_html(tmp_path: Path) -> None:
    """An HTML page named ``.md`` is read as HTML: its markup is not in the text."""
    path = tmp_path / "page.md"
    path.write_bytes(HTML)
    document = only_document(read(path))
    assert layout(document)["format"] == "HTML"
    assert "1850" in document.text
    assert "<p>" not in document.text


def test_file_named_pdf_holding_text_is_refused_naming_what_it_holds(tmp_path: Path) -> None:
    """``fake.pdf`` holding text is refused, saying it is named .pdf but holds text."""
    path = tmp_path / "fake.pdf"
    path.write_text("not a pdf at all", encoding="utf-8")
    error = only_error(read(path))
    assert error.origin == str(path)
    assert error.reason.startswith(
        "named '.pdf' but holds text in no format hopindex reads; accepted: ")


def test_png_with_unknown_suffix_is_refused_as_a_png_image(tmp_path: Path) -> None:
    """Bytes of a PNG under an unknown suffix are refused as ``a PNG image``."""
    path = tmp_path / "picture.xyz"
    path.write_bytes(PNG)
    error = only_error(read(path))
    assert error.reason.startswith("unsupported file type '.xyz' (a PNG image); accepted: ")


# --- folders ---------------------------------------------------------------------------


def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "a.md").write_text("# A\n\nAlpha text.", encoding="utf-8")
    (root / "notes.txt").write_text("Notes text.", encoding="utf-8")
    (root / "sub" / "b.md").write_text("# B\n\nBeta text.", encoding="utf-8")
    (root / "sub" / "deep" / "c.md").write_text("# C\n\nGamma text.", encoding="utf-8")
    return root


def ids(result: ReadResult) -> list[str | None]:
    assert result.errors == []
    return [d.doc_id for d in result.documents]


def test_folder_reads_every_file_by_relative_path(tmp_path: Path) -> None:
    """Without globs every file is read, ids the POSIX path inside the folder."""
    assert ids(read(folder(tmp_path))) == ["a.md", "notes.txt", "sub/b.md", "sub/deep/c.md"]


def test_include_globs_match_the_relative_path_with_star_crossing_folders(
        tmp_path: Path) -> None:
    """``--include '*.md'`` reads Markdown at any depth; ``sub/*`` everything under sub."""
    root = folder(tmp_path)
    md = ReadOptions(reading=Reading(include=("*.md",)))
    assert ids(read(root, options=md)) == ["a.md", "sub/b.md", "sub/deep/c.md"]
    sub = ReadOptions(reading=Reading(include=("sub/*",)))
    assert ids(read(root, options=sub)) == ["sub/b.md", "sub/deep/c.md"]


def test_exclude_globs_drop_matching_files_after_include(tmp_path: Path) -> None:
    """``--exclude`` drops files the include kept; matching is case-sensitive."""
    root = folder(tmp_path)
    options = ReadOptions(reading=Reading(include=("*.md",), exclude=("sub/deep/*",)))
    assert ids(read(root, options=options)) == ["a.md", "sub/b.md"]
    upper = ReadOptions(reading=Reading(exclude=("*.MD",)))
    assert ids(read(root, options=upper)) == ["a.md", "notes.txt", "sub/b.md", "sub/deep/c.md"]


def test_folder_with_no_file_matching_the_globs_says_so(tmp_path: Path) -> None:
    """A folder whose globs select nothing is one error naming --include/--exclude."""
    root = folder(tmp_path)
    options = ReadOptions(reading=Reading(include=("*.pdf",)))
    error = only_error(read(root, options=options))
    assert error.origin == str(root)
    assert error.reason.startswith("folder holds no files matching --include/--exclude; ")


# --- limits ----------------------------------------------------------------------------


def test_file_over_max_file_bytes_is_refused_naming_the_variable(tmp_path: Path) -> None:
    """A file over max_file_bytes is refused before it is parsed, with its size, the
    limit and HOPINDEX_MAX_FILE_BYTES."""
    path = tmp_path / "big.md"
    path.write_text("word " * 40, encoding="utf-8")
    options = ReadOptions(file_limits=FileLimits(max_file_bytes=150))
    error = only_error(read(path, options=options))
    assert error.reason == ("file is 200 bytes, over the 150-byte limit for a file "
                            "(HOPINDEX_MAX_FILE_BYTES)")


def test_html_over_max_html_bytes_is_refused_where_other_formats_pass(tmp_path: Path) -> None:
    """An HTML file has its own, lower cap (HOPINDEX_MAX_HTML_BYTES); a Markdown file of
    the same size is read."""
    page = tmp_path / "page.html"
    page.write_bytes(HTML)
    notes = tmp_path / "notes.md"
    notes.write_bytes(b"x" * len(HTML))
    options = ReadOptions(file_limits=FileLimits(max_html_bytes=100))
    result = read(page, notes, options=options)
    assert [d.doc_id for d in result.documents] == ["notes.md"]
    [error] = result.errors
    assert error.origin == str(page)
    assert error.reason == (f"file is {len(HTML)} bytes, over the 100-byte limit for an HTML "
                            "file (HOPINDEX_MAX_HTML_BYTES)")


def test_text_far_over_the_document_limit_is_refused_unread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A text file over max_document_bytes plus 64 KB of slack is refused before its
    parser runs; one within the slack whose stripped text fits is read."""
    def never(file: FileInput, limits: FileLimits) -> ParsedFile:
        raise AssertionError("parsed a file that should have been refused unread")

    limit = 1000
    far = tmp_path / "far.txt"
    far.write_bytes(b"x" * (limit + 64 * 1024 + 1))
    padded = tmp_path / "padded.txt"
    padded.write_bytes(b"short text" + b" " * (limit + 1000))
    options = ReadOptions(max_document_bytes=limit)
    monkeypatch.setattr("hopindex.readers.files.markdown.parse_plain_text", never)
    error = only_error(read(far, options=options))
    assert error.reason == (f"document 'far.txt' is {limit + 64 * 1024 + 1:,} bytes, over the "
                            "1,000-byte limit (HOPINDEX_MAX_DOCUMENT_BYTES)")
    monkeypatch.undo()
    assert only_document(read(padded, options=options)).text == "short text"


def test_file_name_not_valid_utf8_is_refused(tmp_path: Path) -> None:
    """A file whose name is not UTF-8 (its id and title come from it) is refused,
    asking for a rename."""
    try:
        path = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9.md"))
        path.write_text("# Cafe\n\ntext", encoding="utf-8")
    except (OSError, UnicodeError):
        pytest.skip("the file system refuses a name that is not UTF-8")
    error = only_error(read(path))
    assert error.origin.endswith(":id")
    assert error.reason.endswith("the id and title come from the file's name, which is not "
                                 "valid UTF-8; rename the file")


# --- parser failures -------------------------------------------------------------------


def test_parser_exception_fails_its_file_alone(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A parser library's unexpected exception is a ReadError naming the file, its
    format and the exception; the folder's other files are read."""
    def broken(file: FileInput, limits: FileLimits) -> ParsedFile:
        raise KeyError("xref")

    root = folder(tmp_path)
    monkeypatch.setattr("hopindex.readers.files.markdown.parse_plain_text", broken)
    result = read(root)
    assert [d.doc_id for d in result.documents] == ["a.md", "sub/b.md", "sub/deep/c.md"]
    assert result.errors == [ReadError(str(root / "notes.txt"),
                                       "cannot read this text file (KeyError: 'xref')")]


@pytest.mark.parametrize(("page", "origin_suffix"), [(None, ""), (7, ":page 7")])
def test_unreadable_file_error_is_reported_at_its_page(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page: int | None,
        origin_suffix: str) -> None:
    """An UnreadableFileError is the file's one error, at ``origin:page N`` when it
    names a page, with its reason as given."""
    def unreadable(file: FileInput, limits: FileLimits) -> ParsedFile:
        raise UnreadableFileError("the file is damaged", page=page)

    path = tmp_path / "a.md"
    path.write_text("# A\n\ntext", encoding="utf-8")
    monkeypatch.setattr("hopindex.readers.files.markdown.parse_markdown", unreadable)
    assert only_error(read(path)) == ReadError(str(path) + origin_suffix, "the file is damaged")


# --- layout ----------------------------------------------------------------------------


def test_documents_record_file_format_and_file_hash(tmp_path: Path) -> None:
    """Each document's layout names the file by its path inside the folder (or its
    name when named directly), its format, and the SHA-256 of its bytes."""
    root = folder(tmp_path)
    pdf = root / "sub" / "report.pdf"
    pdf.write_bytes(pdf_bytes())
    by_id = {d.doc_id: d for d in read(root).documents}
    expected = {"a.md": "Markdown", "notes.txt": "text", "sub/report.pdf": "PDF"}
    for relative, format_name in expected.items():
        document = by_id[relative]
        digest = hashlib.sha256((root / relative).read_bytes()).hexdigest()
        assert layout(document)["file"] == relative
        assert layout(document)["format"] == format_name
        assert layout(document)["file_sha256"] == digest
    direct = only_document(read(root / "sub" / "b.md"))
    assert (direct.doc_id, layout(direct)["file"]) == ("b.md", "b.md")
