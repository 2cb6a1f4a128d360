"""Citations of passages: a span of a document's text to its file, page (or page range)
and section, from the layout a structured-file reader recorded."""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Any

import pytest

from hopindex.core.citations import (
    Citation,
    PassageCiter,
    cite_span,
    cite_text,
    document_citation,
    passage_citation,
    section_breaks,
)

# Three pages: page 1 is text[0:40], page 2 text[40:90], page 3 from 90. The
# subsection "Methods > Data" starts at 60, "Methods > Models" at 100.
TEXT = ("a" * 40) + ("b" * 20) + ("c" * 40) + ("d" * 50)
LAYOUT: dict[str, Any] = {
    "file": "report.pdf", "format": "PDF", "file_sha256": "0" * 64, "section": "Methods",
    "pages": [1, 3], "page_starts": [[0, 1], [40, 2], [90, 3]],
    "outline": [[0, "Methods"], [60, "Methods > Data"], [100, "Methods > Models"]],
}


@pytest.mark.parametrize(("citation", "label"), [
    (Citation("report.pdf", 3, 4, "Methods > Data"), "report.pdf, p. 3-4, § Methods > Data"),
    (Citation("report.pdf", 3, 3, "Methods"), "report.pdf, p. 3, § Methods"),
    (Citation("report.pdf", 3), "report.pdf, p. 3"),
    (Citation("page.html", section="Intro"), "page.html, § Intro"),
    (Citation("notes.md"), "notes.md"),
    (Citation("notes.md", section=""), "notes.md"),
])
def test_label_names_file_pages_and_section(citation: Citation, label: str) -> None:
    """A label shows the file, then ``p. N`` or ``p. N-M``, then ``§ path``, each only
    when known."""
    assert citation.label() == label


def test_citation_round_trips_through_a_dict() -> None:
    """``as_dict`` and ``from_dict`` keep every part, None included."""
    for citation in (Citation("a.pdf", 2, 5, "X > Y"), Citation("b.md")):
        assert Citation.from_dict(citation.as_dict()) == citation


def test_span_within_one_page_and_section() -> None:
    """A span inside one page and one subsection cites that page and that path."""
    assert cite_span(LAYOUT, 62, 80) == Citation("report.pdf", 2, 2, "Methods > Data")


def test_span_across_a_page_boundary_is_a_page_range() -> None:
    """A span from page 1 into page 2 cites pages 1-2; one ending exactly where page 2
    starts stays on page 1."""
    assert cite_span(LAYOUT, 30, 50) == Citation("report.pdf", 1, 2, "Methods")
    assert cite_span(LAYOUT, 30, 40) == Citation("report.pdf", 1, 1, "Methods")
    assert cite_span(LAYOUT, 0, len(TEXT)).label() == "report.pdf, p. 1-3, § Methods"


def test_span_before_the_first_outline_mark_falls_back_to_the_layout_section() -> None:
    """Text before a document's first subsection mark has the document's own section;
    in a preamble (no section) it has none."""
    subsection_only = {**LAYOUT, "outline": [[60, "Methods > Data"]]}
    assert cite_span(subsection_only, 10, 20).section == "Methods"
    preamble = {"file": "book.md", "outline": [[60, "Data"]]}
    assert cite_span(preamble, 10, 20) == Citation("book.md")
    assert cite_span(preamble, 60, 70).section == "Data"
    assert cite_span({"file": "book.md", "section": "Only"}, 0, 5).section == "Only"


def test_pages_without_offsets_cite_the_recorded_range() -> None:
    """A layout with ``pages`` but no ``page_starts`` cites that range."""
    assert cite_span({"file": "x.pdf", "pages": [4, 6]}, 0, 10) == Citation("x.pdf", 4, 6)


def test_cite_text_strips_the_title_and_finds_the_body() -> None:
    """A passage ``title\\nbody`` is found by its body, stripped; the citation and the
    body's start are returned."""
    passage = "Report\n" + TEXT[95:110]
    citation, start = cite_text(LAYOUT, TEXT, passage, "Report")
    assert start == 95
    assert citation == Citation("report.pdf", 3, 3, "Methods > Data")
    # Blank space around the body (a chunk as cut, not stripped) is not looked for.
    padded = "Report\n  " + TEXT[95:110] + "\n\n"
    assert cite_text(LAYOUT, TEXT, padded, "Report") == (citation, 95)
    # Without the title the whole passage, title line included, is not in the text.
    whole, cursor = cite_text(LAYOUT, TEXT, passage)
    assert (whole, cursor) == (cite_span(LAYOUT, 0, len(TEXT)), 0)


def test_passage_not_found_is_cited_as_the_whole_document() -> None:
    """A passage not in the text (a stale unit) cites the whole document and leaves the
    search position where it was."""
    citation, cursor = cite_text(LAYOUT, TEXT, "Report\nnowhere in it", "Report",
                                 search_from=42)
    assert citation == Citation("report.pdf", 1, 3, "Methods")
    assert cursor == 42


def test_cite_text_searches_from_the_cursor_then_from_the_start() -> None:
    """A body found after ``search_from`` is cited there; one only before it is still found."""
    text = "alpha beta. alpha beta. gamma."
    layout = {"file": "t.md", "page_starts": [[0, 1], [12, 2]]}
    assert cite_text(layout, text, "alpha beta.", search_from=1) == (Citation("t.md", 2, 2), 12)
    assert cite_text(layout, text, "alpha beta.", search_from=20) == (Citation("t.md", 1, 1), 0)


def test_passage_citer_over_overlapping_chunks_is_in_order_with_right_pages() -> None:
    """Overlapping chunks of a 4 MB text (2,000 of them) are found at increasing offsets,
    each cited with the pages it spans: the search moves on from the last find."""
    paragraph_count = 58_000
    paragraphs = [f"Paragraph {n:05d} of the long report, with words about item {n * 7919}."
                  for n in range(paragraph_count)]
    text = "\n\n".join(paragraphs)
    assert len(text) > 4_000_000
    starts, offset = [], 0
    for paragraph in paragraphs:
        starts.append(offset)
        offset += len(paragraph) + 2
    page_offsets = starts[::40]  # a page of 40 paragraphs
    layout = {"file": "long.pdf", "pages": [1, len(page_offsets)],
              "page_starts": [[start, page] for page, start in enumerate(page_offsets, 1)]}
    chunk, step = 2200, 2000
    begins = range(0, len(text) - chunk, step)
    assert len(begins) >= 2000
    citer = PassageCiter({"hopindex": layout}, text, "Long")
    for begin in begins:
        body = text[begin:begin + chunk]
        start = begin + len(body) - len(body.lstrip())  # the passage is found stripped
        end = begin + len(body.rstrip())
        cited = citer.metadata_for("Long\n" + body)["hopindex"]
        page = bisect.bisect_right(page_offsets, start)
        page_end = bisect.bisect_right(page_offsets, end - 1)
        assert (cited["file"], cited["page"], cited["page_end"]) == ("long.pdf", page,
                                                                     page_end), begin


class CountingMarks(list[list[Any]]):
    """Marks that count how often they are read through."""

    reads = 0

    def __iter__(self) -> Iterator[list[Any]]:
        CountingMarks.reads += 1
        return super().__iter__()


def test_passage_citer_reads_the_layout_marks_once() -> None:
    """A document's page and outline marks are parsed once for all its passages, not
    once per passage: citing a long file's passages stays linear in its length."""
    CountingMarks.reads = 0
    layout = {"file": "r.pdf", "page_starts": CountingMarks([[0, 1], [40, 2], [90, 3]]),
              "outline": CountingMarks([[0, "Methods"], [60, "Methods > Data"]])}
    text = "".join(f"{n:02d}" for n in range(70))  # 140 characters, no window repeats
    citer = PassageCiter({"hopindex": layout}, text)
    cited = [citer.metadata_for(text[start:start + 10])["hopindex"]
             for start in range(0, 140, 10)]
    assert [c["page"] for c in cited] == [1] * 4 + [2] * 5 + [3] * 5
    assert cited[6]["section"] == "Methods > Data"
    assert CountingMarks.reads == 2


def test_passage_citer_finds_a_repeat_after_the_previous_passage() -> None:
    """Text that occurs twice is cited where it follows the previous passage, not at
    its first occurrence: the search starts at the last passage's start."""
    text = "same words here\n\nsame words here"
    layout = {"file": "r.md", "page_starts": [[0, 1], [17, 2]]}
    citer = PassageCiter({"hopindex": layout}, text)
    assert citer.metadata_for("words here\n\nsame")["hopindex"]["page"] == 1
    assert citer.metadata_for("same words here")["hopindex"]["page"] == 2


def test_passage_citer_without_layout_adds_nothing() -> None:
    """A document read from records (no layout under ``hopindex``) gives no citation."""
    assert PassageCiter({}, TEXT).metadata_for(TEXT[:10]) == {}
    assert PassageCiter({"hopindex": {"pages": [1, 2]}}, TEXT).metadata_for(TEXT[:10]) == {}
    assert PassageCiter({"hopindex": "x"}, TEXT).metadata_for(TEXT[:10]) == {}


def test_passage_and_document_citation_read_metadata() -> None:
    """``passage_citation`` reads what PassageCiter wrote; ``document_citation`` cites a
    whole document; both None without a layout."""
    metadata = PassageCiter({"hopindex": LAYOUT}, TEXT).metadata_for(TEXT[100:120])
    assert passage_citation(metadata) == Citation("report.pdf", 3, 3, "Methods > Models")
    assert passage_citation({"title": "x"}) is None
    assert document_citation({"hopindex": LAYOUT}, len(TEXT)) == Citation(
        "report.pdf", 1, 3, "Methods")
    assert document_citation({"user": "data"}, len(TEXT)) is None


def test_section_breaks_are_the_subsection_starts_after_zero() -> None:
    """Chunking cuts at each subsection start past offset 0, sorted and unique."""
    assert section_breaks({"hopindex": LAYOUT}) == [60, 100]
    unsorted = {**LAYOUT, "outline": [[100, "B"], [0, "A"], [60, "C"], [60, "C > D"]]}
    assert section_breaks({"hopindex": unsorted}) == [60, 100]
    assert section_breaks({}) == []
    assert section_breaks({"hopindex": {"file": "x.md"}}) == []
