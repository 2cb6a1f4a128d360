"""The PDF parser: headings from the outline placed where they are in the page text,
text page by page (lazily, the file closed at the end), and every file it cannot read
refused with a reason a user understands. Fixtures are written with fpdf2."""

from __future__ import annotations

import io
import re
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import pypdfium2 as pdfium  # type: ignore[import-untyped]
import pytest
from fpdf import FPDF

from hopindex.readers.files.model import (
    Block,
    FileInput,
    PageProblem,
    ParsedFile,
    UnreadableFileError,
)
from hopindex.readers.files.pdf import ENCRYPTED, NO_TEXT_LAYER, parse_pdf
from hopindex.readers.files.pdf_layout import normalize_text
from hopindex.readers.options import FileLimits

LIMITS = FileLimits()
PROSE = ("The river town grew around its mill, and the mill around the river's fall. "
         "Traders came by boat each spring and left before the floods. ")


def file_input(path: Path) -> FileInput:
    return FileInput(path=path, origin=str(path), head=path.read_bytes()[:8192])


def new_pdf() -> FPDF:
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    return pdf


def text(pdf: FPDF, body: str, height: float = 6) -> None:
    pdf.multi_cell(0, height, body, new_x="LMARGIN", new_y="NEXT")


def heading(pdf: FPDF, outline_title: str, level: int = 0, on_page: str | None = None) -> None:
    """A bookmark at the current height, and the heading's line as the page shows it."""
    pdf.start_section(outline_title, level=level)
    pdf.set_font("helvetica", "B", size=14)
    text(pdf, outline_title if on_page is None else on_page, height=8)
    pdf.set_font("helvetica", size=11)


def save(pdf: FPDF, path: Path) -> Path:
    pdf.output(str(path))
    return path


def parse(path: Path, limits: FileLimits = LIMITS) -> tuple[ParsedFile, list[Block | PageProblem]]:
    parsed = parse_pdf(file_input(path), limits)
    return parsed, list(parsed.blocks)


def body_of(items: list[Block | PageProblem]) -> list[Block]:
    return [b for b in items if isinstance(b, Block) and not b.is_heading]


def png(width: int = 8, height: int = 8) -> bytes:
    """A small RGB PNG, written by hand."""
    rows = b"".join(b"\x00" + bytes((90, 120, 200)) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def scanned_page(pdf: FPDF) -> None:
    pdf.add_page()
    pdf.image(io.BytesIO(png()), x=20, y=20, w=120)


def three_chapters(path: Path) -> Path:
    """Chapter 1 (with sections 1.1 and 1.2 on its page), chapter 2 on page 2, chapter 3
    with its section 3.1 on page 3; the metadata title is "A Small Book"."""
    pdf = new_pdf()
    pdf.set_title("  A Small Book ")
    pdf.add_page()
    text(pdf, "Foreword before any heading.")
    heading(pdf, "Beginnings")
    text(pdf, "Chapter one opens. " + PROSE)
    heading(pdf, "The Mill", level=1)
    text(pdf, "About the mill. " + PROSE)
    heading(pdf, "The River", level=1)
    text(pdf, "About the river. " + PROSE)
    pdf.add_page()
    heading(pdf, "Middle Years")
    text(pdf, "Chapter two. " + PROSE * 3)
    pdf.add_page()
    heading(pdf, "Endings")
    text(pdf, "Chapter three. " + PROSE)
    heading(pdf, "Floods", level=1)
    text(pdf, "The last flood. " + PROSE)
    return save(pdf, path)


# --- headings and text --------------------------------------------------------------


def test_headings_come_from_the_outline_with_levels_and_pages(tmp_path: Path) -> None:
    """Each bookmark is a heading of its outline level + 1, on its page, in order; the
    levels are known before any page is read; the title is the metadata's, stripped."""
    parsed, items = parse(three_chapters(tmp_path / "book.pdf"))
    assert parsed.title == "A Small Book"
    assert parsed.format_name == "PDF"
    assert parsed.pages == 3
    assert parsed.heading_levels == (1, 2, 2, 1, 1, 2)
    headings = [(b.text, b.heading_level, b.page) for b in items
                if isinstance(b, Block) and b.is_heading]
    assert headings == [("Beginnings", 1, 1), ("The Mill", 2, 1), ("The River", 2, 1),
                        ("Middle Years", 1, 2), ("Endings", 1, 3), ("Floods", 2, 3)]
    assert all(isinstance(b, Block) and b.page in (1, 2, 3) for b in items)


def test_sections_on_one_page_are_split_at_their_headings(tmp_path: Path) -> None:
    """Body text before, between and after the headings of one page is its own block,
    and the heading's line is not repeated in the body."""
    _, items = parse(three_chapters(tmp_path / "book.pdf"))
    page_one = [(b.text if b.is_heading else b.text.split(".")[0], b.heading_level)
                for b in items if isinstance(b, Block) and b.page == 1]
    assert page_one == [("Foreword before any heading", 0), ("Beginnings", 1),
                        ("Chapter one opens", 0), ("The Mill", 2), ("About the mill", 0),
                        ("The River", 2), ("About the river", 0)]
    for block in body_of(items):
        for title in ("Beginnings", "The Mill", "The River", "Middle Years", "Endings",
                      "Floods"):
            assert title not in block.text


def test_an_outline_title_matches_its_line_whatever_the_spacing_case_and_number(
        tmp_path: Path) -> None:
    """The page shows "2.1  RESULTS AND   discussion" for the bookmark "Results and
    Discussion": the heading keeps the outline's words, the line (number included) is
    left out of the body, which splits there."""
    pdf = new_pdf()
    pdf.add_page()
    text(pdf, "Methods text. " + PROSE)
    heading(pdf, "Results  and Discussion", on_page="2.1  RESULTS AND   discussion")
    text(pdf, "Results text. " + PROSE)
    heading(pdf, "3 Conclusion", on_page="3. Conclusion")
    text(pdf, "Closing text.")
    _, items = parse(save(pdf, tmp_path / "spacing.pdf"))
    assert [(b.text.split(".")[0] if not b.is_heading else b.text, b.heading_level)
            for b in items if isinstance(b, Block)] == [
        ("Methods text", 0), ("Results and Discussion", 1), ("Results text", 0),
        ("3 Conclusion", 1), ("Closing text", 0)]
    assert not any(re.search(r"(?i)discussion|conclusion", b.text) for b in body_of(items))


def test_a_title_not_in_the_text_is_placed_where_its_bookmark_points(tmp_path: Path) -> None:
    """An outline title the page does not show ("Part Two" over a line "Second part
    begins"): the text above the bookmark goes before the heading, the rest after."""
    pdf = new_pdf()
    pdf.add_page()
    text(pdf, "First part. " + PROSE)
    pdf.start_section("Part Two")
    text(pdf, "Second part begins. " + PROSE)
    _, items = parse(save(pdf, tmp_path / "hidden.pdf"))
    assert [(b.text.split(".")[0], b.heading_level) for b in items
            if isinstance(b, Block)] == [("First part", 0), ("Part Two", 1),
                                         ("Second part begins", 0)]


def test_a_chapter_number_on_the_line_above_goes_with_the_heading(tmp_path: Path) -> None:
    """"CHAPTER 3" on a line of its own over the title the outline names: both lines are
    the heading's, neither is body."""
    pdf = new_pdf()
    pdf.add_page()
    text(pdf, "End of chapter two. " + PROSE)
    heading(pdf, "The Harbour", on_page="CHAPTER 3\nThe Harbour")
    text(pdf, "Ships came in. " + PROSE)
    _, items = parse(save(pdf, tmp_path / "chapter.pdf"))
    assert [(b.text.split(".")[0], b.heading_level) for b in items if isinstance(b, Block)
            ] == [("End of chapter two", 0), ("The Harbour", 1), ("Ships came in", 0)]


def bookmarks_without_heights(data: bytes) -> bytes:
    """fpdf2's ``/XYZ left top null`` destinations as ``/Fit`` (no height), padded to
    the same length so that the cross-reference table stays right."""
    def fit(match: re.Match[bytes]) -> bytes:
        return b"/Fit" + b" " * (len(match.group(0)) - len(b"/Fit"))
    data, count = re.subn(rb"/XYZ [\d.]+ [\d.]+ null", fit, data)
    assert count > 0
    return data


def test_bookmarks_without_a_height_use_the_title_anywhere_or_the_page_start(
        tmp_path: Path) -> None:
    """With no height to go by: a title on its own line; else its words in a line
    ("The Beta Report begins"); else the heading opens what is left of its page."""
    pdf = new_pdf()
    pdf.add_page()
    text(pdf, "Opening words.")
    heading(pdf, "Alpha")
    text(pdf, "Alpha body.")
    pdf.start_section("beta report")
    text(pdf, "The Beta Report begins here.")
    pdf.add_page()
    pdf.start_section("Nowhere In The Text")
    text(pdf, "Page two text.")
    path = tmp_path / "fit.pdf"
    path.write_bytes(bookmarks_without_heights(save(pdf, path).read_bytes()))
    _, items = parse(path)
    assert [(b.text, b.heading_level, b.page) for b in items if isinstance(b, Block)] == [
        ("Opening words.", 0, 1), ("Alpha", 1, 1), ("Alpha body.\nThe", 0, 1),
        ("beta report", 1, 1), ("begins here.", 0, 1),
        ("Nowhere In The Text", 1, 2), ("Page two text.", 0, 2)]


def test_headings_on_a_page_follow_their_heights_not_the_outline_order(
        tmp_path: Path) -> None:
    """Two bookmarks whose outline order is the reverse of their places on the page
    (their destinations swapped): the headings come top to bottom."""
    pdf = new_pdf()
    pdf.add_page()
    pdf.start_section("Upper")
    text(pdf, "Upper text. " + PROSE)
    pdf.start_section("Lower")
    text(pdf, "Lower text. " + PROSE)
    data = save(pdf, tmp_path / "order.pdf").read_bytes()
    first, second = re.findall(rb"/Dest \[[^\]]*\]", data)
    assert len(first) == len(second)
    data = re.sub(rb"/Dest \[[^\]]*\]", lambda m: second if m.group(0) == first else first,
                  data)
    path = tmp_path / "swapped.pdf"
    path.write_bytes(data)
    parsed, items = parse(path)
    assert parsed.heading_levels == (1, 1)
    assert [(b.text.split(".")[0], b.heading_level) for b in items if isinstance(b, Block)
            ] == [("Lower", 1), ("Upper text", 0), ("Upper", 1), ("Lower text", 0)]


def test_a_pdf_without_an_outline_has_no_headings_and_all_its_text(tmp_path: Path) -> None:
    pdf = new_pdf()
    for number in range(1, 4):
        pdf.add_page()
        text(pdf, f"Page {number} says {PROSE}")
    parsed, items = parse(save(pdf, tmp_path / "plain.pdf"))
    assert parsed.heading_levels == ()
    assert parsed.title is None
    assert [(b.page, b.text.split(" says")[0]) for b in body_of(items)] == [
        (1, "Page 1"), (2, "Page 2"), (3, "Page 3")]
    assert len(body_of(items)) == len(items)
    assert all("Traders came by boat" in b.text for b in body_of(items))


def test_a_word_hyphenated_at_a_line_end_is_joined(tmp_path: Path) -> None:
    pdf = new_pdf()
    pdf.add_page()
    text(pdf, "The infor-\nmation was kept, and the 2020-\n2021 figures, and the Anglo-\n"
              "Saxon names.")
    _, items = parse(save(pdf, tmp_path / "hyphen.pdf"))
    [block] = body_of(items)
    assert "information was kept" in block.text
    assert "2020-\n2021" in block.text
    assert "Anglo-\nSaxon" in block.text


@pytest.mark.parametrize(("raw", "clean"), [
    ("one\r\ntwo\rthree", "one\ntwo\nthree"),
    ("infor-\r\nmation", "information"),
    ("infor\ufffemation and Infor\ufffeMation", "information and Infor-\nMation"),
    ("a\x00b\x07c\td", "abc\td"),
    ("  many    spaces   \n  here  ", "many spaces\nhere"),
    ("para\n\n\n\nnext", "para\n\nnext"),
])
def test_page_text_is_normalised(raw: str, clean: str) -> None:
    """Line ends, hyphenation (also pdfium's own marker), control characters, spaces."""
    assert normalize_text(raw) == clean


# --- laziness -------------------------------------------------------------------------


def test_blocks_are_read_page_by_page_and_the_file_closed_at_the_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing is loaded until the blocks are read; the first block needs page 1 only;
    every page is closed before the next loads; closing the blocks closes the file."""
    path = three_chapters(tmp_path / "book.pdf")
    loaded: list[int] = []
    open_pages: list[int] = []
    closed_documents: list[object] = []
    get_page, close_page = pdfium.PdfDocument.get_page, pdfium.PdfPage.close
    close_document = pdfium.PdfDocument.close

    def counting_get_page(self: object, index: int) -> object:
        assert open_pages == [], "a page was still open"
        loaded.append(index)
        open_pages.append(index)
        return get_page(self, index)

    def counting_close_page(self: object, *args: object, **kwargs: object) -> object:
        if open_pages:
            open_pages.pop()
        return close_page(self, *args, **kwargs)

    def counting_close_document(self: object, *args: object, **kwargs: object) -> object:
        closed_documents.append(self)
        return close_document(self, *args, **kwargs)

    monkeypatch.setattr(pdfium.PdfDocument, "get_page", counting_get_page)
    monkeypatch.setattr(pdfium.PdfPage, "close", counting_close_page)
    monkeypatch.setattr(pdfium.PdfDocument, "close", counting_close_document)

    parsed = parse_pdf(file_input(path), LIMITS)
    assert loaded == []
    blocks = parsed.blocks
    assert isinstance(blocks, Iterator)
    first = next(blocks)
    assert first == Block("Foreword before any heading.", 0, 1)
    assert loaded == [0]
    assert open_pages == []
    assert closed_documents == []
    blocks.close()  # type: ignore[attr-defined]
    assert loaded == [0]
    assert len(closed_documents) == 1

    loaded.clear()
    closed_documents.clear()
    list(parse_pdf(file_input(path), LIMITS).blocks)
    assert loaded == [0, 1, 2]
    assert open_pages == []
    assert len(closed_documents) == 1


# --- files it cannot read -----------------------------------------------------------


def refusal(path: Path, limits: FileLimits = LIMITS) -> UnreadableFileError:
    """The refusal, whether parse_pdf raises it or reading its blocks does."""
    with pytest.raises(UnreadableFileError) as caught:
        list(parse_pdf(file_input(path), limits).blocks)
    return caught.value


def test_an_encrypted_pdf_is_refused_as_encrypted(tmp_path: Path) -> None:
    pdf = new_pdf()
    pdf.set_encryption(owner_password="owner-secret", user_password="reader-secret")
    pdf.add_page()
    text(pdf, PROSE)
    with pytest.raises(UnreadableFileError) as caught:
        parse_pdf(file_input(save(pdf, tmp_path / "locked.pdf")), LIMITS)
    assert caught.value.reason == ENCRYPTED == "encrypted PDF: remove its password to ingest it"


def test_a_pdf_with_only_an_owner_password_is_read(tmp_path: Path) -> None:
    """Permissions alone (no password to open it) do not stop reading its text."""
    pdf = new_pdf()
    pdf.set_encryption(owner_password="owner-secret")
    pdf.add_page()
    text(pdf, "Open to read.")
    _, items = parse(save(pdf, tmp_path / "permissions.pdf"))
    assert items == [Block("Open to read.", 0, 1)]


def test_a_truncated_pdf_is_refused_as_corrupt(tmp_path: Path) -> None:
    whole = three_chapters(tmp_path / "book.pdf").read_bytes()
    path = tmp_path / "half.pdf"
    path.write_bytes(whole[:len(whole) // 2])
    error = refusal(path)
    assert error.reason.startswith("not a readable PDF (corrupt or truncated): ")
    assert error.page is None


def test_garbage_after_a_pdf_header_is_refused_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "garbage.pdf"
    path.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 40)
    assert refusal(path).reason.startswith("not a readable PDF (corrupt or truncated): ")


def test_a_page_that_cannot_be_loaded_names_its_page(tmp_path: Path) -> None:
    """The page tree points page 2 at an object that is not there: the pages before it
    are read, then the file is refused naming page 2."""
    data = three_chapters(tmp_path / "book.pdf").read_bytes()
    kids = re.search(rb"/Kids \[(\d+) 0 R\s+(\d+) 0 R", data)
    assert kids is not None
    second = kids.group(2)
    missing = b"9" * len(second)  # same length: the cross-reference table stays right
    path = tmp_path / "broken.pdf"
    path.write_bytes(data[:kids.start(2)] + missing + data[kids.end(2):])
    parsed = parse_pdf(file_input(path), LIMITS)
    read: list[Block | PageProblem] = []
    with pytest.raises(UnreadableFileError) as caught:
        for item in parsed.blocks:
            read.append(item)
    assert caught.value.page == 2
    assert str(caught.value).startswith("page 2: not a readable PDF (corrupt or truncated): ")
    assert {b.page for b in read} == {1}


def test_a_pdf_over_the_page_limit_is_refused_naming_the_variable(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError) as caught:
        parse_pdf(file_input(three_chapters(tmp_path / "book.pdf")), FileLimits(max_pages=2))
    assert caught.value.reason == "3 pages, over the 2-page limit (HOPINDEX_MAX_FILE_PAGES)"


# --- scans ----------------------------------------------------------------------------


def test_a_scanned_pdf_is_refused_as_having_no_text_layer(tmp_path: Path) -> None:
    """Every page an image and no text: the whole file is refused, and no page problem
    is given before the refusal."""
    pdf = new_pdf()
    for _ in range(3):
        scanned_page(pdf)
    parsed = parse_pdf(file_input(save(pdf, tmp_path / "scan.pdf")), LIMITS)
    read: list[Block | PageProblem] = []
    with pytest.raises(UnreadableFileError) as caught:
        for item in parsed.blocks:
            read.append(item)
    assert caught.value.reason == ("no text layer on any of its 3 pages — scanned? "
                                   "OCR is not supported")
    assert read == []


@pytest.mark.parametrize("scanned", [1, 2])
def test_one_image_only_page_among_text_pages_is_a_page_problem(
        tmp_path: Path, scanned: int) -> None:
    """The image-only page is reported (in page order, also when it comes first) and
    the other pages give their text."""
    pdf = new_pdf()
    for number in range(1, 4):
        if number == scanned:
            scanned_page(pdf)
        else:
            pdf.add_page()
            text(pdf, f"Page {number} text.")
    _, items = parse(save(pdf, tmp_path / "mixed.pdf"))
    expected: list[Block | PageProblem] = [
        PageProblem(number, NO_TEXT_LAYER) if number == scanned
        else Block(f"Page {number} text.", 0, number) for number in range(1, 4)]
    assert items == expected


def test_a_blank_page_gives_nothing(tmp_path: Path) -> None:
    pdf = new_pdf()
    pdf.add_page()
    text(pdf, "Before the blank.")
    pdf.add_page()
    pdf.add_page()
    text(pdf, "After the blank.")
    _, items = parse(save(pdf, tmp_path / "blank.pdf"))
    assert items == [Block("Before the blank.", 0, 1), Block("After the blank.", 0, 3)]

