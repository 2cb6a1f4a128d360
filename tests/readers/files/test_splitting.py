"""A parsed file's blocks into documents: one per top-level section (or page, or the
whole file), with ids and titles from the headings and a layout that records where
each page and subsection starts in the document's text."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import pytest

from hopindex.readers.base import RawDocument, ReadError, ReadOptions
from hopindex.readers.files.model import Block, PageProblem, ParsedFile, UnreadableFileError
from hopindex.readers.files.splitting import FileFacts, slugify, split_file
from hopindex.readers.options import SplitBy

FACTS = FileFacts(relative="guide/manual.md", origin="/data/guide/manual.md", sha256="ab" * 32)
OPTIONS = ReadOptions()


def heading(text: str, level: int = 1, page: int | None = None) -> Block:
    return Block(text, heading_level=level, page=page)


def body(text: str, page: int | None = None) -> Block:
    return Block(text, page=page)


def parsed(blocks: Sequence[Block | PageProblem], *, title: str | None = None,
           pages: int | None = None, format_name: str = "Markdown") -> ParsedFile:
    levels = tuple(b.heading_level for b in blocks if isinstance(b, Block) and b.is_heading)
    return ParsedFile(title=title, heading_levels=levels, blocks=iter(blocks), pages=pages,
                      format_name=format_name)


def split(file: ParsedFile, split_by: SplitBy = SplitBy.SECTION,
          options: ReadOptions = OPTIONS) -> tuple[list[RawDocument], list[ReadError]]:
    documents: list[RawDocument] = []
    errors: list[ReadError] = []
    for item in split_file(file, FACTS, split_by, options):
        if isinstance(item, RawDocument):
            documents.append(item)
        else:
            errors.append(item)
    return documents, errors


def documents_of(blocks: Sequence[Block | PageProblem], *,
                 split_by: SplitBy = SplitBy.SECTION, title: str | None = None,
                 pages: int | None = None, format_name: str = "Markdown") -> list[RawDocument]:
    documents, errors = split(parsed(blocks, title=title, pages=pages, format_name=format_name),
                              split_by)
    assert errors == []
    return documents


def layout(document: RawDocument) -> dict[str, object]:
    assert document.layout is not None
    return document.layout


def test_each_top_level_section_is_a_document_with_path_slug_id_and_heading_title() -> None:
    """Top-level headings split the file; a document's id is ``relative#slug`` and its
    title the heading, which is not repeated in its text."""
    documents = documents_of([
        heading("Results and Discussion"), body("We found things."),
        heading("Future Work"), body("More things."),
    ])
    assert [(d.doc_id, d.title, d.text) for d in documents] == [
        ("guide/manual.md#results-and-discussion", "Results and Discussion", "We found things."),
        ("guide/manual.md#future-work", "Future Work", "More things."),
    ]
    assert [layout(d)["section"] for d in documents] == ["Results and Discussion", "Future Work"]
    assert all(d.origin == FACTS.origin for d in documents)


def test_slug_keeps_the_letters_of_any_script() -> None:
    """A heading in another script keeps its letters in the id: ``Kraków`` is
    ``kraków``, not ``krak-w``."""
    documents = documents_of([heading("Kraków"), body("A city."),
                              heading("Łódź i okolice"), body("Another.")])
    assert [d.doc_id for d in documents] == ["guide/manual.md#kraków",
                                             "guide/manual.md#łódź-i-okolice"]
    assert slugify("Ünïcode — Straße!") == "ünïcode-strasse"
    assert slugify("!!!") == "section"


def test_duplicate_slugs_are_numbered_in_order() -> None:
    """Sections whose headings give one slug get ``-2``, ``-3`` in reading order."""
    documents = documents_of([heading("Notes"), body("one"), heading("notes"), body("two"),
                              heading("NOTES!"), body("three")])
    assert [d.doc_id for d in documents] == ["guide/manual.md#notes", "guide/manual.md#notes-2",
                                             "guide/manual.md#notes-3"]
    assert [d.text for d in documents] == ["one", "two", "three"]


def test_numbered_slug_never_collides_with_a_heading_that_reads_so() -> None:
    """A heading that itself slugs to ``x-2`` and a second ``x`` get distinct ids, so
    neither section is dropped as a duplicate."""
    documents = documents_of([heading("Part 2"), body("a"), heading("Part"), body("b"),
                              heading("Part"), body("c")])
    ids = [d.doc_id for d in documents]
    assert len(set(ids)) == 3, ids
    assert ids[:2] == ["guide/manual.md#part-2", "guide/manual.md#part"]


def test_lone_top_heading_opening_the_file_is_its_title_not_a_section() -> None:
    """A single ``# Title`` over ``##`` sections titles the file: the sections split at
    level 2, and their section paths leave the title out."""
    documents = documents_of([
        heading("The Manual"), body("What this manual covers."),
        heading("Install", 2), body("Run it."),
        heading("Use", 2), body("Use it."),
    ])
    assert [(d.doc_id, d.title) for d in documents] == [
        ("guide/manual.md", "The Manual"),
        ("guide/manual.md#install", "Install"),
        ("guide/manual.md#use", "Use"),
    ]
    assert documents[0].text == "What this manual covers."
    assert "section" not in layout(documents[0])
    assert layout(documents[1])["section"] == "Install"


def test_lone_title_heading_over_body_only_is_one_document() -> None:
    """A file whose only heading is its title is one document titled by it."""
    documents = documents_of([heading("Only Title"), body("All the text.")])
    assert [(d.doc_id, d.title, d.text) for d in documents] == [
        ("guide/manual.md", "Only Title", "All the text.")]


def test_preamble_before_the_first_section_is_a_document_titled_by_the_file() -> None:
    """Text before the first section is the document ``relative``, titled by the
    parser's title or, without one, the file's stem."""
    blocks = [body("Foreword."), heading("One"), body("x"), heading("Two"), body("y")]
    documents = documents_of(blocks)
    assert (documents[0].doc_id, documents[0].title, documents[0].text) == (
        "guide/manual.md", "manual", "Foreword.")
    assert [d.doc_id for d in documents[1:]] == ["guide/manual.md#one", "guide/manual.md#two"]
    titled = documents_of(blocks, title="A Proper Title")
    assert titled[0].title == "A Proper Title"


def test_empty_section_and_empty_preamble_give_no_document() -> None:
    """A heading with nothing under it is no document, and neither is an empty preamble."""
    documents = documents_of([heading("Empty"), heading("Full"), body("text")])
    assert [d.doc_id for d in documents] == ["guide/manual.md#full"]


def test_subsection_outline_offsets_point_at_the_heading_in_the_text() -> None:
    """A deeper heading stays in the text as its own paragraph, and the outline records
    its offset there and its path from the top-level section."""
    documents = documents_of([
        heading("Methods"), body("Overview of methods."),
        heading("Data", 2), body("Where data came from."),
        heading("Cleaning", 3), body("How it was cleaned."),
        heading("Models", 2), body("Which models."),
        heading("Results"), body("What came out."),
    ])
    methods, results = documents
    assert layout(results)["outline"] == [[0, "Results"]]
    assert methods.text == ("Overview of methods.\n\nData\n\nWhere data came from.\n\n"
                            "Cleaning\n\nHow it was cleaned.\n\nModels\n\nWhich models.")
    outline = layout(methods)["outline"]
    assert isinstance(outline, list)
    assert outline[0] == [0, "Methods"]
    marks = outline[1:]
    assert [path for _, path in marks] == ["Methods > Data", "Methods > Data > Cleaning",
                                           "Methods > Models"]
    for offset, path in marks:
        heading_text = path.split(" > ")[-1]
        assert methods.text[offset:offset + len(heading_text)] == heading_text
        assert offset == 0 or methods.text[offset - 2:offset] == "\n\n"


def test_pages_recorded_per_document_and_a_section_starting_mid_page() -> None:
    """Each document records its first and last page and where each page starts in its
    text; a section that starts mid-page starts on that page at offset 0."""
    documents = documents_of([
        heading("Intro", page=1), body("Page one text.", page=1), body("Page two.", page=2),
        heading("Body", page=2), body("Still two.", page=2), body("Three.", page=3),
        heading("Sub", 2, page=3), body("Four.", page=4),
    ], pages=4, format_name="PDF")
    intro, main = documents
    assert layout(intro)["pages"] == [1, 2]
    assert layout(intro)["page_starts"] == [[0, 1], [intro.text.index("Page two."), 2]]
    assert layout(main)["pages"] == [2, 4]
    assert layout(main)["page_starts"] == [
        [0, 2], [main.text.index("Three."), 3], [main.text.index("Four."), 4]]
    assert layout(main)["format"] == "PDF"


def test_section_whose_heading_ends_a_page_starts_on_that_page() -> None:
    """A section whose heading is the last line of page 2, its text on page 3, records
    pages 2-3: where it starts is where a reader finds its heading."""
    documents = documents_of([
        heading("First", page=1), body("one", page=1), heading("Second", page=2),
        body("three", page=3),
    ], pages=3, format_name="PDF")
    assert [layout(d)["pages"] for d in documents] == [[1, 1], [2, 3]]


def test_file_mode_is_one_document_with_every_heading_in_its_outline() -> None:
    """``--split-by file`` keeps the file whole: one document, id the relative path,
    headings in its text and outline."""
    documents = documents_of([
        heading("Alpha", page=1), body("a", page=1), heading("Beta", page=2), body("b", page=2),
    ], split_by=SplitBy.FILE, pages=2, title="Book")
    [document] = documents
    assert (document.doc_id, document.title) == ("guide/manual.md", "Book")
    assert document.text == "Alpha\n\na\n\nBeta\n\nb"
    assert layout(document)["outline"] == [[0, "Alpha"], [document.text.index("Beta"), "Beta"]]
    assert layout(document)["pages"] == [1, 2]
    assert "section" not in layout(document)


def test_page_mode_is_one_document_per_page() -> None:
    """``--split-by page`` makes ``relative#page-N`` documents titled
    ``<file title>, page N``, each on its one page."""
    documents = documents_of([
        heading("Title", page=1), body("one", page=1), body("two", page=2),
        heading("Part", 2, page=3), body("three", page=3),
    ], split_by=SplitBy.PAGE, pages=3, title="Book")
    assert [(d.doc_id, d.title, d.text) for d in documents] == [
        ("guide/manual.md#page-1", "Book, page 1", "Title\n\none"),
        ("guide/manual.md#page-2", "Book, page 2", "two"),
        ("guide/manual.md#page-3", "Book, page 3", "Part\n\nthree"),
    ]
    assert [layout(d)["pages"] for d in documents] == [[1, 1], [2, 2], [3, 3]]
    assert layout(documents[2])["outline"] == [[0, "Title > Part"]]


def test_a_page_opening_inside_a_section_is_cited_with_it() -> None:
    """A page's document that starts in the middle of a section (its heading was on an
    earlier page) records that section at its start, so its passages cite it."""
    documents = documents_of([
        heading("Intro", page=1), body("one", page=1), body("two", page=2),
    ], split_by=SplitBy.PAGE, pages=2, title="Book")
    assert layout(documents[1])["outline"] == [[0, "Intro"]]


def test_page_mode_of_a_format_without_pages_is_one_document() -> None:
    """A format without pages (HTML, DOCX, Markdown) split by page is one document."""
    documents = documents_of([heading("A"), body("a"), heading("B"), body("b")],
                             split_by=SplitBy.PAGE)
    assert [(d.doc_id, d.title) for d in documents] == [("guide/manual.md", "manual")]
    assert "pages" not in layout(documents[0])


def test_layout_names_file_format_and_hash() -> None:
    """Every document's layout records the file, its format and its SHA-256."""
    [document] = documents_of([body("text")], format_name="text")
    assert layout(document) == {"file": "guide/manual.md", "format": "text",
                                "file_sha256": FACTS.sha256}


def test_document_over_the_limit_fails_alone_and_the_others_are_kept() -> None:
    """A section over max_document_bytes is a ReadError naming it (origin#slug, its id
    and size, the variable); the file's other sections are still documents."""
    options = ReadOptions(max_document_bytes=100)
    file = parsed([heading("Small"), body("fits"), heading("Huge"), body("é" * 60),
                   heading("Last"), body("fits too")])
    documents, errors = split(file, options=options)
    assert [d.doc_id for d in documents] == ["guide/manual.md#small", "guide/manual.md#last"]
    [error] = errors
    assert error.origin == "/data/guide/manual.md#huge"
    assert "'guide/manual.md#huge' is 120 bytes" in error.reason
    assert "HOPINDEX_MAX_DOCUMENT_BYTES" in error.reason
    assert "empty" not in error.reason


def test_over_limit_whole_file_hints_at_a_smaller_split() -> None:
    """A whole file over the limit says which --split-by would make smaller documents."""
    options = ReadOptions(max_document_bytes=10)
    by_file = parsed([heading("A"), body("x" * 20)])
    _, [error] = split(by_file, SplitBy.FILE, options)
    assert "--split-by section" in error.reason
    paged = parsed([body("x" * 20, page=1)], pages=1)
    _, [error] = split(paged, SplitBy.SECTION, options)
    assert "--split-by page" in error.reason


@pytest.mark.parametrize("blocks", [[], [heading("A"), body("  \n "), heading("B")]])
def test_file_without_text_is_one_error(blocks: list[Block]) -> None:
    """A file with no text (or only empty sections) is one ReadError, no document."""
    documents, errors = split(parsed(blocks))
    assert documents == []
    assert errors == [ReadError(FACTS.origin, "document text is empty")]


def test_page_problems_are_reported_with_their_page_and_the_rest_goes_on() -> None:
    """A PageProblem is a ReadError at ``origin:page N``; the other pages are read."""
    file = parsed([body("one", page=1), PageProblem(2, "no text layer"), body("three", page=3)],
                  pages=3, format_name="PDF")
    documents, errors = split(file)
    assert errors == [ReadError("/data/guide/manual.md:page 2", "no text layer")]
    [document] = documents
    assert document.text == "one\n\nthree"
    assert layout(document)["page_starts"] == [[0, 1], [5, 3]]


def test_unreadable_file_mid_iteration_yields_no_document() -> None:
    """An UnreadableFileError raised while the blocks are read propagates before any
    document (or page problem) is yielded: a partial file would replace the whole one."""
    def blocks() -> Iterator[Block | PageProblem]:
        yield heading("One", page=1)
        yield body("text", page=1)
        yield PageProblem(2, "no text layer")
        yield heading("Two", page=3)
        raise UnreadableFileError("the file is damaged", page=4)

    file = ParsedFile(title=None, heading_levels=(1, 1), blocks=blocks(), pages=5)
    yielded: list[RawDocument | ReadError] = []
    with pytest.raises(UnreadableFileError) as caught:
        yielded.extend(split_file(file, FACTS, SplitBy.SECTION, OPTIONS))
    assert yielded == []
    assert caught.value.page == 4


def test_problems_come_before_documents() -> None:
    """Page problems are yielded first, then the documents in reading order."""
    items: Iterable[RawDocument | ReadError] = split_file(
        parsed([heading("A", page=1), body("a", page=1), PageProblem(2, "blank")], pages=2),
        FACTS, SplitBy.SECTION, OPTIONS)
    kinds = [type(item).__name__ for item in items]
    assert kinds == ["ReadError", "RawDocument"]


def test_a_file_read_in_part_says_so_on_each_of_its_documents() -> None:
    """A page without text, or a section over the size limit, leaves the file read in
    part: its documents' layouts say ``file_complete: false`` (so an ingest does not
    take what failed for sections deleted); a file read whole says nothing."""
    whole, _ = split(parsed([heading("A"), body("a"), heading("B"), body("b")]))
    assert all("file_complete" not in layout(d) for d in whole)
    paged, _ = split(parsed([heading("A", page=1), body("a", page=1),
                             PageProblem(2, "no text layer")], pages=2))
    assert [layout(d)["file_complete"] for d in paged] == [False]
    small = ReadOptions(max_document_bytes=5)
    refused, errors = split(parsed([heading("A"), body("a"), heading("B"), body("b" * 9)]),
                            options=small)
    assert [layout(d)["file_complete"] for d in refused] == [False] and len(errors) == 1
