"""Chunking of documents read from structured files: a document that must be cut is cut
at its subsections too, so no chunk spans two of them, and its passages carry their
citations; short documents and documents without a layout chunk as before."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

import pytest

from hopindex.core.citations import section_breaks
from hopindex.core.models import Document, Sentence
from hopindex.methods.chunking import ChunkPolicy, chunk_document, chunk_text, passage_units
from hopindex.readers.base import RawDocument, ReadOptions
from hopindex.readers.files.model import Block, ParsedFile
from hopindex.readers.files.splitting import FileFacts, split_file
from hopindex.readers.options import SplitBy

POLICY = ChunkPolicy(max_chars=300, overlap_chars=60)
_SENTENCE = re.compile(r"[^.\n][^.]*\.")


def prose(name: str, count: int) -> str:
    return " ".join(f"Sentence {n} of {name} records fact {n * 7919 + len(name)}."
                    for n in range(count))


def sentences_of(text: str) -> tuple[Sentence, ...]:
    """Sentence bounds as a splitter gives them: each up to its full stop."""
    return tuple(Sentence(m.start(), m.end()) for m in _SENTENCE.finditer(text))


def methods_document(title: str = "Methods") -> Document:
    """The ``Methods`` section of a PDF as the reader makes it: three subsections (one
    long, one short), pages 2-5, its layout under ``metadata["hopindex"]``."""
    blocks = [
        Block("Methods", heading_level=1, page=2), Block(prose("overview", 6), page=2),
        Block("Data", heading_level=2, page=2), Block(prose("data", 12), page=3),
        Block("Models", heading_level=2, page=3), Block(prose("models", 20), page=4),
        Block("Tiny", heading_level=2, page=5), Block("Just one line.", page=5),
        Block("Results", heading_level=1, page=6), Block(prose("results", 2), page=6),
    ]
    parsed = ParsedFile(title="Report", heading_levels=(1, 2, 2, 2, 1), blocks=iter(blocks),
                        pages=6, format_name="PDF")
    facts = FileFacts(relative="report.pdf", origin="/in/report.pdf", sha256="f" * 64)
    raw = next(item for item in split_file(parsed, facts, SplitBy.SECTION, ReadOptions())
               if isinstance(item, RawDocument))
    assert raw.layout is not None and raw.doc_id == "report.pdf#methods"
    return Document(doc_id=raw.doc_id, index="idx", title=title, text=raw.text,
                    content_hash="h", metadata={"author": "A. Writer", "hopindex": raw.layout})


def segments(document: Document) -> list[tuple[int, int]]:
    bounds = [0, *section_breaks(document.metadata), len(document.text)]
    return list(pairwise(bounds))


def placed(text: str, chunks: list[str]) -> list[tuple[int, int]]:
    """Where each chunk lies in ``text``: searched in order, each unique there."""
    spans, cursor = [], 0
    for chunk in chunks:
        assert text.count(chunk) == 1, chunk
        start = text.index(chunk)
        assert start >= cursor
        spans.append((start, start + len(chunk)))
        cursor = start
    return spans


def assert_within_segments(document: Document, chunks: list[str]) -> None:
    """Every chunk lies inside one segment, and together they hold all of the text."""
    bounds = segments(document)
    covered: set[int] = set()
    for start, end in placed(document.text, chunks):
        assert any(low <= start and end <= high for low, high in bounds), (start, end, bounds)
        covered.update(range(start, end))
    missed = {i for i, char in enumerate(document.text) if not char.isspace()} - covered
    assert not missed


def test_layout_has_subsection_breaks() -> None:
    """The fixture document has three subsection starts to cut at."""
    document = methods_document()
    assert len(document.text) > 4 * POLICY.max_chars
    breaks = section_breaks(document.metadata)
    assert [document.text[b:b + 4] for b in breaks] == ["Data", "Mode", "Tiny"]


def test_character_windows_never_cross_a_subsection_start() -> None:
    """Without sentence bounds a long document is windowed within each subsection."""
    document = methods_document()
    chunks = chunk_document(document, policy=POLICY)
    assert_within_segments(document, chunks)
    assert "Tiny\n\nJust one line." in chunks
    assert all(len(c) <= POLICY.max_chars for c in chunks)


def test_sentence_chunks_never_cross_a_subsection_start() -> None:
    """With sentence bounds each chunk ends at a sentence and stays in one subsection,
    stripped like every other chunk."""
    document = methods_document()
    chunks = chunk_document(document, sentences_of(document.text), POLICY)
    assert_within_segments(document, chunks)
    assert all(c and c == c.strip() for c in chunks)
    assert all(len(c) <= POLICY.max_chars for c in chunks)
    assert "Tiny\n\nJust one line." in chunks


def test_chunk_text_with_breaks_cuts_at_each_break() -> None:
    """``chunk_text`` given breaks cuts there even where the sentences would have joined
    the two sides; within a part the overlap is kept."""
    text = " ".join(f"Line {n} says {n * 13}." for n in range(40))
    policy = ChunkPolicy(max_chars=120, overlap_chars=30)
    cut = text.index("Line 20")
    chunks = chunk_text(text, sentences_of(text), policy, breaks=[cut])
    spans = placed(text, chunks)
    assert all(end <= cut or start >= cut for start, end in spans)
    assert any(start == cut for start, _ in spans)
    assert any(a_end > b_start for (_, a_end), (b_start, _) in pairwise(spans))


def test_short_document_with_subsections_stays_whole() -> None:
    """A document within max_chars is one chunk whatever its subsections."""
    document = methods_document()
    roomy = ChunkPolicy(max_chars=len(document.text), overlap_chars=60)
    assert chunk_document(document, policy=roomy) == [document.text]
    sentences = sentences_of(document.text)
    assert chunk_document(document, sentences, roomy) == [document.text]
    assert chunk_text(document.text, sentences, roomy,
                      section_breaks(document.metadata)) == [document.text]


@pytest.mark.parametrize("metadata", [
    {}, {"author": "A. Writer"}, {"hopindex": {"file": "x.md", "outline": [[0, "Only"]]}},
])
def test_document_without_subsections_chunks_as_before(metadata: dict[str, Any]) -> None:
    """Without a layout (or one with no subsection past the start) the chunks are those
    of ``chunk_text`` without breaks, and the plain overlapping windows."""
    text = methods_document().text
    document = Document(doc_id="d", index="idx", title="T", text=text, content_hash="h",
                        metadata=metadata)
    sentences = sentences_of(text)
    assert chunk_document(document, sentences, POLICY) == chunk_text(text, sentences, POLICY)
    step = POLICY.max_chars - POLICY.overlap_chars
    windows = [text[s:s + POLICY.max_chars].strip()
               for s in range(0, len(text) - POLICY.overlap_chars, step)]
    assert chunk_document(document, policy=POLICY) == windows


def test_passage_units_carry_file_page_and_section() -> None:
    """Each passage unit of a document with a layout has ``metadata["hopindex"]``: the
    file, the pages its chunk spans and the subsection it is in."""
    document = methods_document(title="Report: Methods")
    chunks = chunk_document(document, sentences_of(document.text), POLICY)
    units = passage_units(document, chunks, "test")
    assert [u.metadata["chunk"] for u in units] == list(range(len(chunks)))
    citations = [u.metadata["hopindex"] for u in units]
    assert {c["file"] for c in citations} == {"report.pdf"}
    by_section: dict[str, list[tuple[int, int]]] = {}
    for chunk, citation in zip(chunks, citations, strict=True):
        by_section.setdefault(citation["section"], []).append(
            (citation["page"], citation["page_end"]))
        heading = citation["section"].split(" > ")[-1]
        expected = "overview" if heading == "Methods" else heading.lower()
        assert expected in chunk or heading in chunk
    assert list(by_section) == ["Methods", "Methods > Data", "Methods > Models",
                                "Methods > Tiny"]
    assert by_section["Methods > Tiny"] == [(5, 5)]
    assert by_section["Methods"][0][0] == 2
    assert {page for pages in by_section["Methods > Models"] for page in pages} <= {3, 4}
    assert units[0].metadata["title"] == "Report: Methods"
    assert units[0].text.startswith("Report: Methods\n")


def test_passage_units_of_a_document_without_layout_have_no_citation() -> None:
    """A document read from records gets passage units without ``hopindex`` metadata."""
    document = Document(doc_id="d", index="idx", title="T", text="Some text.",
                        content_hash="h", metadata={"source": "records"})
    [unit] = passage_units(document, ["Some text."], "test")
    assert unit.metadata == {"title": "T", "chunk": 0}
