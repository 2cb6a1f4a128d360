"""The document-file writers produce what the matching library reads back.

Proves: a PDF's text and outline (titles verbatim, levels, pages) read back with
pypdfium2, with a page break every ``sections_per_page`` sections and long text
flowing on; non-Latin titles (Polish, macronned Japanese, Chinese) survive in the
outline and the text layer; python-docx reads DOCX headings, paragraphs and the core
title; the HTML page holds every section inside ``<main><article>`` and every
boilerplate text outside it (none without boilerplate); markdown-it reads the
Markdown headings at their levels; the scanned PDF has images and no text; the
encrypted PDF opens only with its password; the zip bomb really expands past its
figure; dates are fixed; ``hotpot_files`` writes the expected files with every
title kept.
"""

from __future__ import annotations

import zipfile
from datetime import datetime
from pathlib import Path

import docx
import lxml.html  # type: ignore[import-untyped]  # lxml ships no type information
import pypdfium2 as pdfium  # type: ignore[import-untyped]  # ships no type information
import pypdfium2.raw as pdfium_c  # type: ignore[import-untyped]
import pytest
from markdown_it import MarkdownIt

from hopindex.testing.document_files import (
    ENCRYPTED_PDF_PASSWORD,
    FIXED_DATE,
    HTML_BOILERPLATE_TEXTS,
    Section,
    encrypted_pdf,
    hotpot_files,
    hotpot_records,
    scanned_pdf,
    write_docx,
    write_html,
    write_markdown,
    write_pdf,
    zip_bomb_docx,
)

SECTIONS = [
    Section("Mill town", "The river town grew around its mill.\n\nTraders came by boat."),
    Section("Floods", "Each spring the river rose over the lower fields.", level=2),
    Section("Harvest", "Barley was cut in August and sold upriver."),
    Section("Winters", "Ice closed the river from December to March.", level=2),
    Section("Decline", "The railway took the trade away in 1880."),
]
NON_LATIN = [Section("Łódź", "Łódź lies in central Poland."),
             Section("Ōsaka", "Ōsaka is a port on Honshū."),
             Section("北京大学", "北京大学位于北京。")]


def pdf_text(path: Path, password: str | None = None) -> list[str]:
    document = pdfium.PdfDocument(path, password=password)
    return [document[i].get_textpage().get_text_range() for i in range(len(document))]


def pdf_outline(path: Path) -> list[tuple[str, int, int]]:
    """(title, level, page index) per bookmark."""
    return [(item.get_title(), item.level, item.get_dest().get_index())
            for item in pdfium.PdfDocument(path).get_toc()]


def test_pdf_text_and_outline(tmp_path: Path) -> None:
    """Every heading is a bookmark at its level on the page its text starts on, a new
    page every ``sections_per_page`` sections, and the text reads back in order."""
    path = tmp_path / "a.pdf"
    write_pdf(path, SECTIONS, title="River towns", sections_per_page=2)
    assert pdf_outline(path) == [("Mill town", 0, 0), ("Floods", 1, 0), ("Harvest", 0, 1),
                                 ("Winters", 1, 1), ("Decline", 0, 2)]
    pages = pdf_text(path)
    assert len(pages) == 3
    assert pages[0].startswith("River towns")
    for section, page in zip(SECTIONS, [0, 0, 1, 1, 2], strict=True):
        assert section.title in pages[page]
        for paragraph in section.paragraphs():
            assert paragraph in pages[page].replace("\r\n", " ")
    assert pdfium.PdfDocument(path).get_metadata_dict()["Title"] == "River towns"


def test_pdf_long_text_flows_and_outline_can_be_left_out(tmp_path: Path) -> None:
    """A section longer than a page runs onto further pages after its heading; with
    ``outline=False`` the file has no bookmarks."""
    path = tmp_path / "long.pdf"
    long = Section("Chronicle", "\n\n".join(f"Year {n} passed quietly." for n in range(300)))
    write_pdf(path, [long], outline=False)
    pages = pdf_text(path)
    assert len(pages) > 3
    assert pages[0].startswith("Chronicle")
    assert "Year 299 passed quietly." in pages[-1]
    assert pdf_outline(path) == []


def test_pdf_heading_never_stranded_at_page_foot(tmp_path: Path) -> None:
    """Sections of many lengths on running pages: each bookmark points at a page that
    shows its heading and the first words of its text."""
    path = tmp_path / "run.pdf"
    sections = [Section(f"Part {n}", " ".join(["Words of the text run on."] * (5 + 7 * n % 40)))
                for n in range(60)]
    write_pdf(path, sections, sections_per_page=len(sections))
    pages = [page.replace("\r\n", " ") for page in pdf_text(path)]
    outline = pdf_outline(path)
    assert [title for title, _, _ in outline] == [s.title for s in sections]
    for title, _, page in outline:
        assert f"{title} Words of the text" in pages[page], title


def test_non_latin_titles_survive(tmp_path: Path) -> None:
    """Titles and text outside latin-1, Chinese included (which DejaVu Sans lacks),
    read back verbatim from the outline and the text layer."""
    path = tmp_path / "intl.pdf"
    write_pdf(path, NON_LATIN)
    assert [title for title, _, _ in pdf_outline(path)] == ["Łódź", "Ōsaka", "北京大学"]
    text = pdf_text(path)[0]
    for section in NON_LATIN:
        assert section.title in text
        assert section.text in text


def test_docx_headings_paragraphs_and_title(tmp_path: Path) -> None:
    """python-docx reads the title (core property and Title paragraph), each section as
    "Heading N" and its paragraphs in order."""
    path = tmp_path / "a.docx"
    write_docx(path, [*SECTIONS, *NON_LATIN], title="River towns")
    document = docx.Document(str(path))
    assert document.core_properties.title == "River towns"
    read = [(p.style.name if p.style is not None else "", p.text) for p in document.paragraphs]
    expected = [("Title", "River towns")]
    for section in [*SECTIONS, *NON_LATIN]:
        expected.append((f"Heading {section.level}", section.title))
        expected += [("Normal", paragraph) for paragraph in section.paragraphs()]
    assert read == expected


def test_dates_are_fixed(tmp_path: Path) -> None:
    """The PDF's creation date, the DOCX's core dates and its zip members' timestamps
    are the fixed ones, so the same input gives the same bytes."""
    write_pdf(tmp_path / "a.pdf", SECTIONS)
    write_docx(tmp_path / "a.docx", SECTIONS)
    metadata = pdfium.PdfDocument(tmp_path / "a.pdf").get_metadata_dict()
    assert metadata["CreationDate"] == FIXED_DATE.strftime("D:%Y%m%d%H%M%SZ")
    properties = docx.Document(str(tmp_path / "a.docx")).core_properties
    assert properties.created == properties.modified == FIXED_DATE
    with zipfile.ZipFile(tmp_path / "a.docx") as archive:
        stamps = {datetime(*info.date_time) for info in archive.infolist()}
    assert stamps == {FIXED_DATE.replace(tzinfo=None)}
    first = (tmp_path / "a.docx").read_bytes()
    write_docx(tmp_path / "a.docx", SECTIONS)
    assert (tmp_path / "a.docx").read_bytes() == first


def test_html_sections_inside_article_boilerplate_around(tmp_path: Path) -> None:
    """Each section is a heading (``<h2>`` for level 1) with its paragraphs inside
    ``<main><article>``; every boilerplate text is on the page outside the article,
    and none is there without boilerplate."""
    path = tmp_path / "a.html"
    write_html(path, SECTIONS, title="River & towns")
    tree = lxml.html.fromstring(path.read_text(encoding="utf-8"))
    [article] = tree.xpath("//main/article")
    headings = [(node.tag, node.text_content())
                for node in article.xpath(".//*[self::h1 or self::h2 or self::h3]")]
    assert headings == [("h1", "River & towns")] + [
        (f"h{s.level + 1}", s.title) for s in SECTIONS]
    assert [node.text_content() for node in article.xpath(".//p")] == [
        p for s in SECTIONS for p in s.paragraphs()]
    for tag in ("header", "nav", "aside", "footer", "script", "style"):
        assert tree.xpath(f"//{tag}"), tag
    outside = tree.body.text_content()
    article_text = article.text_content()
    for text in HTML_BOILERPLATE_TEXTS:
        assert text in outside and text not in article_text, text
    write_html(path, SECTIONS, boilerplate=False)
    bare = path.read_text(encoding="utf-8")
    assert not [text for text in HTML_BOILERPLATE_TEXTS[:5] if text in bare]
    assert "<nav" not in bare and "<footer" not in bare


def test_markdown_headings_by_level(tmp_path: Path) -> None:
    """markdown-it reads ``# title`` then each section one level below it; without a
    title, a level-1 section is ``#``."""
    path = tmp_path / "a.md"

    def headings() -> list[tuple[str, str]]:
        tokens = MarkdownIt().parse(path.read_text(encoding="utf-8"))
        return [(token.tag, tokens[i + 1].content) for i, token in enumerate(tokens)
                if token.type == "heading_open"]

    write_markdown(path, SECTIONS, title="River towns")
    assert headings() == [("h1", "River towns")] + [(f"h{s.level + 1}", s.title)
                                                    for s in SECTIONS]
    write_markdown(path, SECTIONS)
    assert headings() == [(f"h{s.level}", s.title) for s in SECTIONS]
    assert "Traders came by boat." in path.read_text(encoding="utf-8")


def test_scanned_pdf_has_images_and_no_text(tmp_path: Path) -> None:
    """Each page of the scanned PDF holds an image and yields no text."""
    path = tmp_path / "scan.pdf"
    scanned_pdf(path, pages=3)
    document = pdfium.PdfDocument(path)
    assert len(document) == 3
    for page in document:
        assert page.get_textpage().get_text_range().strip() == ""
        assert [obj.type for obj in page.get_objects()] == [pdfium_c.FPDF_PAGEOBJ_IMAGE]


def test_encrypted_pdf_needs_its_password(tmp_path: Path) -> None:
    """The encrypted PDF is refused without a password and reads with it."""
    path = tmp_path / "locked.pdf"
    encrypted_pdf(path)
    with pytest.raises(pdfium.PdfiumError, match="password"):
        pdfium.PdfDocument(path)
    assert "Salary bands" in pdf_text(path, ENCRYPTED_PDF_PASSWORD)[0]


def test_zip_bomb_expands_far_beyond_its_size(tmp_path: Path) -> None:
    """The bomb is a DOCX package whose document.xml, read in full, is at least the
    asked size and over 100 times its stored size."""
    path = tmp_path / "bomb.docx"
    zip_bomb_docx(path, expanded_bytes=20_000_000)
    with zipfile.ZipFile(path) as archive:
        assert {"[Content_Types].xml", "_rels/.rels", "word/document.xml"} <= set(
            archive.namelist())
        member = archive.getinfo("word/document.xml")
        expanded = 0
        with archive.open(member) as stream:
            head = stream.read(4096)
            expanded += len(head)
            while chunk := stream.read(1 << 20):
                expanded += len(chunk)
                last = chunk
    assert head.startswith(b"<?xml") and b"<w:body>" in head
    assert last.endswith(b"</w:body></w:document>")
    assert expanded == member.file_size >= 20_000_000
    assert expanded > 100 * path.stat().st_size


def test_hotpot_records_are_the_gold_passages() -> None:
    """The bundled corpus gives 994 records whose text is the sentences joined."""
    records = hotpot_records()
    assert len(records) == 994
    assert records[0]["title"] == "Demon Dice"
    assert records[0]["text"].startswith("Demon Dice, originally published")
    assert " In it, each player controls" in records[0]["text"]


def test_hotpot_files_write_every_format_and_keep_titles(tmp_path: Path) -> None:
    """The first 20 records, 8 per file, in four formats: 3 files each, in order, and
    every title read back verbatim from the PDF outlines and DOCX headings."""
    records = hotpot_records()[:20]
    paths = hotpot_files(records, tmp_path, per_file=8, formats=("pdf", "docx", "html", "md"))
    assert [p.name for p in paths] == [f"hotpot-{n:04d}.{ext}" for n in range(3)
                                       for ext in ("pdf", "docx", "html", "md")]
    assert all(p.exists() for p in paths)
    titles = [record["title"] for record in records]
    assert [t for p in paths if p.suffix == ".pdf" for t, _, _ in pdf_outline(p)] == titles
    assert [para.text for p in paths if p.suffix == ".docx"
            for para in docx.Document(str(p)).paragraphs
            if para.style is not None and para.style.name == "Heading 1"] == titles
    markdown = "".join(p.read_text(encoding="utf-8") for p in paths if p.suffix == ".md")
    assert all(f"# {title}\n" in markdown for title in titles)
    with pytest.raises(ValueError, match="unknown formats"):
        hotpot_files(records, tmp_path, formats=("rtf",))
