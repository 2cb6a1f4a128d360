"""Extractive stage 1 (chunks, mentions), title linking and stage 2 bridges, without models."""

import itertools

from hopindex.core.ids import content_hash
from hopindex.core.models import (
    Document,
    EntitySpan,
    MentionSource,
    Sentence,
    TextAnalysis,
    UnitKind,
)
from hopindex.methods.bridges import is_bridge
from hopindex.methods.extractive.linking import TitleLexicon
from hopindex.methods.extractive.stage1 import (
    ChunkPolicy,
    chunk_text,
    entity_mentions,
    passage_units,
)
from hopindex.methods.extractive.stage2 import BridgePolicy, build_bridge_unit


def doc(doc_id: str, title: str, text: str) -> Document:
    return Document(doc_id=doc_id, index="t", title=title, text=text,
                    content_hash=content_hash(title, text))


def sentences_of(text: str) -> tuple[Sentence, ...]:
    out, start = [], 0
    for part in text.split(". "):
        end = start + len(part) + (2 if start + len(part) < len(text) else 0)
        out.append(Sentence(start, min(end, len(text))))
        start = end
    return tuple(out)


def analysis(text: str, *ents: tuple[str, str]) -> TextAnalysis:
    spans = tuple(EntitySpan(t, label, text.index(t), text.index(t) + len(t)) for t, label in ents)
    return TextAnalysis(sentences=sentences_of(text), entities=spans)


def test_mentions_drop_numeric_labels_and_add_the_title() -> None:
    """DATE/CARDINAL entities are dropped, short keys filtered, the title is its own entity."""
    text = "Gallu is a demon of Mesopotamia. It appeared in 1961 with three horns."
    a = analysis(text, ("Mesopotamia", "LOC"), ("1961", "DATE"), ("three", "CARDINAL"))
    mentions = entity_mentions(doc("d1", "Gallu (demon)", text), a)
    assert {(m.entity, m.source) for m in mentions} == {
        ("mesopotamia", MentionSource.NER), ("gallu", MentionSource.TITLE)}


def test_short_document_is_one_passage_with_title() -> None:
    """A document under the chunk limit is one passage whose text starts with the title."""
    d = doc("d1", "Title", "Body text.")
    units = passage_units(d, analysis(d.text))
    assert len(units) == 1
    assert units[0].text == "Title\nBody text."
    assert units[0].kind is UnitKind.PASSAGE
    assert units[0].source_doc_ids == ("d1",)


def test_long_document_is_chunked_at_sentences_with_overlap() -> None:
    """Chunks respect the size limit, cover the text, and overlap their neighbours."""
    text = " ".join(f"Sentence number {i} says something about topic {i}." for i in range(200))
    policy = ChunkPolicy(max_chars=500, overlap_chars=100)
    chunks = chunk_text(text, sentences_of(text), policy)
    assert len(chunks) > 1
    assert all(len(c) <= 500 for c in chunks)
    assert chunks[0].startswith("Sentence number 0 ")
    assert chunks[-1].endswith("topic 199.")
    for left, right in itertools.pairwise(chunks):
        assert right.split(" says")[0] in left  # each chunk starts inside the previous one


def test_title_lexicon_finds_other_documents_titles_only() -> None:
    """A text naming another document's title mentions it; its own title does not count."""
    lexicon = TitleLexicon({"lilu": ["d2"], "gallu": ["d1"], "new york city": ["d3"]})
    found = lexicon.find_mentions("d1", "Gallu fought Lilu twice near New York City; lilu won.")
    assert {(m.entity, m.count) for m in found} == {("lilu", 2), ("new york city", 1)}
    assert all(m.source is MentionSource.LEXICON for m in found)
    assert lexicon.find_mentions("d1", "New York is not New York City's prefix") != []
    assert lexicon.find_mentions("d1", "Lilium flowers") == []


def test_bridge_unit_quotes_mentioning_sentences_across_documents() -> None:
    """The bridge takes mentioning sentences from each document, most mentions first."""
    a = doc("a", "Lilu (mythology)", "Lilu is a demon. Lilu appears in texts. Other things.")
    b = doc("b", "Alû", "Alû is a demon. It is related to lilu spirits.")
    analyses = {"a": analysis(a.text), "b": analysis(b.text)}
    unit = build_bridge_unit("t", "lilu", [b, a], analyses, BridgePolicy())
    assert unit is not None
    assert unit.kind is UnitKind.BRIDGE
    assert unit.source_doc_ids == ("a", "b")
    assert unit.text == ("Lilu (mythology): Lilu is a demon. Lilu appears in texts. | "
                         "Alû: It is related to lilu spirits.")
    assert unit.entities == ("lilu",)


def test_bridge_needs_two_documents_and_respects_limits() -> None:
    """One document makes no bridge; max_docs and max_sentences cap the unit."""
    docs = [doc(f"d{i}", f"T{i}", "Zeus rules. Zeus thunders. Zeus sleeps.") for i in range(7)]
    analyses = {d.doc_id: analysis(d.text) for d in docs}
    policy = BridgePolicy(max_docs=3, max_sentences=1)
    assert build_bridge_unit("t", "zeus", docs[:1], analyses, policy) is None
    unit = build_bridge_unit("t", "zeus", docs, analyses, policy)
    assert unit is not None
    assert len(unit.source_doc_ids) == 3
    assert unit.text.count("Zeus") == 3


def test_bridge_window() -> None:
    """Bridge entities have 2 <= df <= tau."""
    assert [is_bridge(n, 3) for n in range(5)] == [False, False, True, True, False]


def test_same_bridge_text_gives_same_unit_id() -> None:
    """Rebuilding an unchanged bridge yields the same id, so nothing is re-embedded."""
    a = doc("a", "A", "Zeus rules.")
    b = doc("b", "B", "Zeus sleeps.")
    analyses = {"a": analysis(a.text), "b": analysis(b.text)}
    first = build_bridge_unit("t", "zeus", [a, b], analyses, BridgePolicy())
    again = build_bridge_unit("t", "zeus", [b, a], analyses, BridgePolicy())
    assert first is not None and again is not None
    assert first.unit_id == again.unit_id
