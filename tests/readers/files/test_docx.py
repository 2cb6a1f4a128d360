"""The DOCX parser: a Word file's headings, body runs and tables in reading order, its
title, and a clear refusal of whatever is not a sound .docx (a .doc, a corrupt zip, a
zip bomb, sizes that lie)."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import docx
import pytest
from docx.document import Document
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls

from hopindex.readers.files.docx import parse_docx
from hopindex.readers.files.model import (
    Block,
    FileInput,
    PageProblem,
    ParsedFile,
    UnreadableFileError,
)
from hopindex.readers.options import FileLimits

W = nsdecls("w")
REVISION = 'w:author="a" w:date="2024-01-01T00:00:00Z"'


def save(document: Document, path: Path) -> Path:
    document.save(str(path))
    return path


def parse(path: Path, limits: FileLimits | None = None) -> ParsedFile:
    return parse_docx(FileInput(path, path.name, path.read_bytes()[:64]), limits or FileLimits())


def blocks_of(parsed: ParsedFile) -> list[Block]:
    blocks = list(parsed.blocks)
    assert not any(isinstance(block, PageProblem) for block in blocks)
    return [block for block in blocks if isinstance(block, Block)]


def refusal(path: Path, limits: FileLimits | None = None) -> str:
    with pytest.raises(UnreadableFileError) as caught:
        parse(path, limits)
    return caught.value.reason


def append_to_body(document: Document, xml: str) -> None:
    # Before the body's closing section properties, where Word keeps its content.
    document.element.body.sectPr.addprevious(parse_xml(xml))


def test_headings_keep_their_levels_and_body_paragraphs_join_into_runs(tmp_path: Path) -> None:
    """Heading 1..3 paragraphs are heading blocks of those levels, listed in order in
    heading_levels; the body paragraphs between two headings are one block, one line
    each, and empty paragraphs are left out."""
    document = docx.Document()
    document.add_paragraph("Preamble.")
    document.add_heading("Intro", level=1)
    document.add_paragraph("First.")
    document.add_paragraph("   ")
    document.add_paragraph("Second.")
    document.add_heading("Method", level=2)
    document.add_heading("Detail", level=3)
    document.add_paragraph("Third.")
    parsed = parse(save(document, tmp_path / "a.docx"))
    assert parsed.format_name == "DOCX"
    assert parsed.pages is None
    assert parsed.heading_levels == (1, 2, 3)
    assert blocks_of(parsed) == [
        Block("Preamble."),
        Block("Intro", heading_level=1),
        Block("First.\nSecond."),
        Block("Method", heading_level=2),
        Block("Detail", heading_level=3),
        Block("Third."),
    ]


def test_a_table_is_one_block_of_rows_with_merged_cells_once_per_row(tmp_path: Path) -> None:
    """A table is its own block between the paragraphs around it, one line per row with
    cells joined by " | "; a cell merged across columns is written once, a cell merged
    down rows repeats on each, so every row reads whole."""
    document = docx.Document()
    document.add_paragraph("Before.")
    table = document.add_table(rows=3, cols=3)
    for row, values in enumerate([["Region", "", "Total"], ["North", "Q1", "10"],
                                  ["", "Q2", "12"]]):
        for column, value in enumerate(values):
            table.cell(row, column).text = value
    table.cell(0, 0).merge(table.cell(0, 1))
    table.cell(1, 0).merge(table.cell(2, 0))
    document.add_paragraph("After.")
    assert blocks_of(parse(save(document, tmp_path / "t.docx"))) == [
        Block("Before."),
        Block("Region | Total\nNorth | Q1 | 10\nNorth | Q2 | 12"),
        Block("After."),
    ]


def test_the_title_style_gives_the_title_and_is_no_heading(tmp_path: Path) -> None:
    """With no title in the core properties, the first Title-style paragraph is the
    file's title; it is neither a heading nor a block."""
    document = docx.Document()
    document.add_heading("Annual  Report", level=0)  # level 0 is the Title style
    document.add_heading("Results", level=1)
    document.add_paragraph("Up.")
    parsed = parse(save(document, tmp_path / "t.docx"))
    assert parsed.title == "Annual Report"
    assert parsed.heading_levels == (1,)
    assert blocks_of(parsed) == [Block("Results", heading_level=1), Block("Up.")]


def test_the_core_title_wins_and_a_different_title_paragraph_stays_text(tmp_path: Path) -> None:
    """A title in the core properties is the file's title; a Title-style paragraph saying
    something else is kept as body text rather than lost."""
    document = docx.Document()
    document.core_properties.title = "Official Name"
    document.add_heading("Cover Line", level=0)
    document.add_paragraph("Body.")
    parsed = parse(save(document, tmp_path / "c.docx"))
    assert parsed.title == "Official Name"
    assert blocks_of(parsed) == [Block("Cover Line\nBody.")]


def test_no_title_anywhere_is_none(tmp_path: Path) -> None:
    """A file with neither a core title nor a Title paragraph has no title."""
    document = docx.Document()
    document.core_properties.title = ""
    document.add_paragraph("Only text.")
    assert parse(save(document, tmp_path / "n.docx")).title is None


def test_custom_styles_with_an_outline_level_are_headings(tmp_path: Path) -> None:
    """A custom paragraph style that sets an outline level (as localized or house
    heading styles do) makes headings of that level, and so does a style based on it;
    a paragraph's own outline level overrides its style's."""
    document = docx.Document()
    chapter = document.styles.add_style("Kapitel", WD_STYLE_TYPE.PARAGRAPH)
    chapter.element.get_or_add_pPr().append(parse_xml(f'<w:outlineLvl {W} w:val="0"/>'))
    section = document.styles.add_style("Abschnitt", WD_STYLE_TYPE.PARAGRAPH)
    section.element.get_or_add_pPr().append(parse_xml(f'<w:outlineLvl {W} w:val="1"/>'))
    derived = document.styles.add_style("Kapitel Anhang", WD_STYLE_TYPE.PARAGRAPH)
    derived.base_style = chapter
    document.add_paragraph("Einleitung", style="Kapitel")
    document.add_paragraph("Grundlagen", style="Abschnitt")
    document.add_paragraph("Anhang", style="Kapitel Anhang")
    demoted = document.add_paragraph("Plain", style="Kapitel")
    demoted._p.get_or_add_pPr().append(parse_xml(f'<w:outlineLvl {W} w:val="9"/>'))
    parsed = parse(save(document, tmp_path / "s.docx"))
    assert parsed.heading_levels == (1, 2, 1)
    assert blocks_of(parsed)[-1] == Block("Plain")


def test_tracked_insertions_are_read_and_deletions_are_not(tmp_path: Path) -> None:
    """Text inserted with tracked changes on is part of the paragraph (python-docx's own
    Paragraph.text drops it); deleted text is not."""
    document = docx.Document()
    paragraph = document.add_paragraph("Kept ")
    paragraph._p.append(parse_xml(
        f'<w:ins {W} w:id="1" {REVISION}><w:r><w:t>inserted</w:t></w:r></w:ins>'))
    paragraph._p.append(parse_xml(
        f'<w:del {W} w:id="2" {REVISION}><w:r><w:delText> deleted</w:delText></w:r></w:del>'))
    assert blocks_of(parse(save(document, tmp_path / "r.docx"))) == [Block("Kept inserted")]


def test_content_controls_are_opened_and_a_table_of_contents_left_out(tmp_path: Path) -> None:
    """Paragraphs inside a block content control are read (python-docx's
    iter_inner_content skips them); a table of contents, which repeats the headings,
    is not."""
    document = docx.Document()
    append_to_body(document, (
        f'<w:sdt {W}><w:sdtPr><w:docPartObj><w:docPartGallery w:val="Table of Contents"/>'
        '</w:docPartObj></w:sdtPr><w:sdtContent><w:p><w:r><w:t>Intro 1</w:t></w:r></w:p>'
        '</w:sdtContent></w:sdt>'))
    document.add_heading("Intro", level=1)
    append_to_body(document, (
        f'<w:sdt {W}><w:sdtPr/><w:sdtContent><w:p><w:r><w:t>Filled in.</w:t></w:r></w:p>'
        '</w:sdtContent></w:sdt>'))
    assert blocks_of(parse(save(document, tmp_path / "c.docx"))) == [
        Block("Intro", heading_level=1), Block("Filled in.")]


def small_docx(tmp_path: Path, name: str = "d.docx") -> Path:
    document = docx.Document()
    document.add_paragraph("Hello.")
    return save(document, tmp_path / name)


def test_a_zip_bomb_member_is_refused_naming_the_limit(tmp_path: Path) -> None:
    """A member inflating over the ratio limit (4 MB of zeros, about 1000:1) is refused
    before python-docx reads it; the reason names the variable that sets the limit."""
    path = small_docx(tmp_path)
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/media/zeros.bin", b"\0" * 4_000_000)
    reason = refusal(path)
    assert reason.startswith("zip expands to ")
    assert "for word/media/zeros.bin" in reason
    assert "HOPINDEX_MAX_ZIP_RATIO=100" in reason
    assert "HOPINDEX_MAX_ZIP_EXPANDED_BYTES" in reason
    assert blocks_of(parse(path, FileLimits(max_zip_ratio=10_000))) == [Block("Hello.")]


def test_a_zip_expanding_past_the_total_limit_is_refused(tmp_path: Path) -> None:
    """The members' expanded sizes together over max_zip_expanded_bytes are refused."""
    path = small_docx(tmp_path)
    expanded = sum(member.file_size for member in zipfile.ZipFile(path).infolist())
    reason = refusal(path, FileLimits(max_zip_expanded_bytes=expanded - 1))
    assert reason.startswith(f"zip expands to {expanded:,} bytes")
    assert f"HOPINDEX_MAX_ZIP_EXPANDED_BYTES={expanded - 1}" in reason


def test_a_member_inflating_past_its_declared_size_is_refused(tmp_path: Path) -> None:
    """A member that declares 100 bytes but holds 20 MB of deflated zeros is refused:
    the declared sizes the limits judge cannot be used to slip a bomb past them."""
    path = small_docx(tmp_path)
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/media/pad.bin", b"\0" * 20_000_000)
    data = bytearray(path.read_bytes())
    name = b"word/media/pad.bin"
    local = data.rfind(b"PK\x03\x04", 0, data.find(name))
    struct.pack_into("<I", data, local + 22, 100)  # the local header's size
    central = data.rfind(b"PK\x01\x02", 0, data.rfind(name))
    struct.pack_into("<I", data, central + 24, 100)  # the central directory's size
    path.write_bytes(bytes(data))
    assert zipfile.ZipFile(path).getinfo("word/media/pad.bin").file_size == 100
    assert refusal(path) == (
        "corrupt .docx: word/media/pad.bin expands past the 100 bytes its zip entry declares")


def test_a_file_that_is_not_a_zip_is_refused(tmp_path: Path) -> None:
    """A file with no zip signature is named as not a .docx."""
    path = tmp_path / "fake.docx"
    path.write_text("Just some text pretending to be Word.")
    assert refusal(path) == "not a Word .docx file (not a zip archive)"


def test_an_ole_file_is_refused_as_a_doc_or_an_encrypted_docx(tmp_path: Path) -> None:
    """A file opening with the OLE compound-file signature (.doc, or an encrypted .docx)
    is refused with what to do about it."""
    path = tmp_path / "old.docx"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 504)
    assert refusal(path) == (
        "a Word 97-2003 .doc file or an encrypted .docx: save it as .docx without a password")


def test_a_zip_without_a_word_document_is_refused(tmp_path: Path) -> None:
    """A zip that is not a Word package (no word/document.xml) is named as such."""
    path = tmp_path / "other.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("xl/workbook.xml", "<workbook/>")
    assert refusal(path) == "not a Word .docx file (no word/document.xml)"


def test_a_truncated_docx_is_refused_as_a_corrupt_zip(tmp_path: Path) -> None:
    """A .docx cut short (its zip directory lost) is refused as a corrupt archive."""
    path = small_docx(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert refusal(path).startswith("corrupt .docx (bad zip archive): ")


def test_a_package_python_docx_cannot_load_is_refused_with_its_reason(tmp_path: Path) -> None:
    """A zip holding word/document.xml but no package parts is refused with
    python-docx's reason rather than its exception escaping."""
    path = tmp_path / "bare.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("word/document.xml", f"<w:document {W}/>")
    reason = refusal(path)
    assert reason.startswith("not a readable Word .docx file: ")
    assert "[Content_Types].xml" in reason
