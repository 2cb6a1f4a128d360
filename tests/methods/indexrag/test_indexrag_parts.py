"""IndexRAG's pure parts: parsing, fact selection, balanced selection, units, prompts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hopindex.backends.llm.client import LlmClient, LlmSettings
from hopindex.backends.llm.ratelimit import InProcessRateLimiter, RateLimits
from hopindex.backends.llm.reply_shapes import collecting_notes
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.errors import ReplyShapeError
from hopindex.core.models import Document, ScoredUnit, Sentence, Unit, UnitKind
from hopindex.methods.chunking import chunk_document
from hopindex.methods.indexrag.parsing import (
    DocFacts,
    ExtractedFacts,
    QaPair,
    parse_stage1,
    parse_stage2,
)
from hopindex.methods.indexrag.prompts import stage1_request, stage2_request
from hopindex.methods.indexrag.units import (
    aku_unit,
    bridge_units,
    document_entities,
    select_facts,
)
from hopindex.methods.retrieval.answer import answer_request
from hopindex.methods.retrieval.selection import balanced_selection
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer


def _doc(doc_id: str = "d1", text: str = "Some text.", title: str = "Title") -> Document:
    return Document(doc_id=doc_id, index="idx", title=title, text=text, content_hash="h")


def _unit(name: str, kind: UnitKind) -> Unit:
    return Unit(unit_id=name, index="idx", kind=kind, text=name, source_doc_ids=("d",),
                method="indexrag", source_key=name)


# --- parsing ---------------------------------------------------------------------------


def test_parse_stage1_accepts_good_shapes() -> None:
    """A full reply parses; empty answers are dropped, numbers kept, entities optional."""
    facts = parse_stage1({"qa_pairs": [{"question": "Who?", "answer": "Ada Lovelace"},
                                       {"question": "Empty?", "answer": "  "},
                                       {"question": "When?", "answer": 1843}],
                          "entities": ["Ada Lovelace", "", "Ada Lovelace"]})
    assert facts.qa_pairs == (QaPair("Who?", "Ada Lovelace"), QaPair("When?", "1843"))
    assert facts.entities == ("Ada Lovelace",)
    assert parse_stage1({"qa_pairs": [], "entities": []}) == ExtractedFacts((), ())
    assert parse_stage1({"qa_pairs": []}).entities == ()


@pytest.mark.parametrize("bad", [
    [], "text", {"entities": []}, {"qa_pairs": "x"}, {"qa_pairs": ["x"]},
    {"qa_pairs": [{"question": "q"}]}, {"qa_pairs": [{"question": "q", "answer": None}]},
    {"qa_pairs": [], "entities": "Ada"}, {"qa_pairs": [], "entities": [1]},
])
def test_parse_stage1_rejects_bad_shapes(bad: Any) -> None:
    """Wrong shapes raise the errors that trigger the client's repair attempt."""
    with pytest.raises((ValueError, KeyError, TypeError)):
        parse_stage1(bad)


def test_parse_stage2_accepts_array_and_wrappers() -> None:
    """A bare array and the JSON-mode wrappers parse; blanks and duplicates go."""
    assert parse_stage2(["A and B.", " ", "A and B."]) == ("A and B.",)
    assert parse_stage2({"bridging_facts": ["x"]}) == ("x",)
    assert parse_stage2({"facts": []}) == ()
    assert parse_stage2([]) == ()


@pytest.mark.parametrize("bad", [{"result": []}, "fact", [1], [{"fact": "x"}],
                                 {"facts": "x"}, None])
def test_parse_stage2_rejects_bad_shapes(bad: Any) -> None:
    """Anything but a list of strings (bare or wrapped) is rejected."""
    with pytest.raises((ValueError, KeyError, TypeError)):
        parse_stage2(bad)


def test_parse_stage1_drops_misfits_and_nulls_not_the_reply() -> None:
    """A null pair, a pair without an answer and a null entity are dropped and noted;
    a numeric answer is read as text (coerced); per-pair entities keep their text names
    only; a list none of whose elements fit fails, naming the reply kind."""
    with collecting_notes() as notes:
        facts = parse_stage1({"qa_pairs": [
            None, {"question": "Who?"}, {"question": "When?", "answer": 1843},
            {"question": "Who?", "answer": "Ada", "entities": ["Ada", None]}],
            "entities": ["Ada", None, {"name": "x"}]})
    assert facts.qa_pairs == (QaPair("When?", "1843"), QaPair("Who?", "Ada", ("Ada",)))
    assert facts.entities == ("Ada",)
    assert (notes.coerced, notes.dropped) == (1, 5)
    with pytest.raises(ReplyShapeError, match=r"indexrag\.stage1 qa_pairs: no usable element"):
        parse_stage1({"qa_pairs": [None, {"question": "q"}]})


def test_parse_stage2_drops_misfit_facts_not_the_reply() -> None:
    """A null or numeric fact is dropped and noted, a blank one too; the rest kept in
    order; nothing but misfits fails."""
    with collecting_notes() as notes:
        assert parse_stage2({"bridging_facts": [None, "A and B.", 3, " "]}) == ("A and B.",)
    assert notes.dropped == 3
    with pytest.raises(ReplyShapeError, match=r"indexrag\.stage2 bridging_facts"):
        parse_stage2([None, 3])


# --- fact selection --------------------------------------------------------------------


def _facts(doc_id: str, mentioning: int, other: int = 1) -> DocFacts:
    pairs = [QaPair(f"Where is Paris {i}?", f"answer {i}") for i in range(mentioning)]
    pairs += [QaPair(f"Other {i}?", f"nothing {i}") for i in range(other)]
    return DocFacts(doc_id, f"Title {doc_id}", tuple(pairs))


def test_select_facts_limits_documents_and_facts() -> None:
    """At most 5 documents (most mentions first, ties by id), at most 8 facts each."""
    docs = [_facts("d7", 1), _facts("d2", 10), _facts("d3", 3), _facts("d1", 3),
            _facts("d4", 2), _facts("d5", 2), _facts("d6", 0)]
    chosen = select_facts("paris", docs)
    assert [d.doc_id for d in chosen] == ["d2", "d1", "d3", "d4", "d5"]
    assert len(chosen[0].qa_pairs) == 8
    assert all("paris" in p.question.lower() for d in chosen for p in d.qa_pairs)


def test_select_facts_mention_rule() -> None:
    """A fact mentions e by substring of question or answer (any case) or its entity list."""
    doc = DocFacts("d1", "T", (QaPair("Who founded it?", "Marie CURIE did"),
                               QaPair("What prize?", "The Nobel Prize",
                                      entities=("Marie Curie",)),
                               QaPair("Where?", "Warsaw")))
    (chosen,) = select_facts("marie curie", [doc])
    assert [p.answer for p in chosen.qa_pairs] == ["Marie CURIE did", "The Nobel Prize"]
    assert select_facts("london", [doc]) == []


# --- balanced selection ----------------------------------------------------------------


def test_balanced_selection_caps_bridges_and_keeps_akus() -> None:
    """Bridges stop at k_b, every AKU and passage is taken, order is kept."""
    ranked = [_unit(f"b{i}", UnitKind.BRIDGE) for i in range(5)]
    ranked += [_unit("a0", UnitKind.AKU), _unit("p0", UnitKind.PASSAGE),
               _unit("b5", UnitKind.BRIDGE), _unit("a1", UnitKind.AKU)]
    chosen = balanced_selection(ranked, k=10, k_b=3)
    assert [u.unit_id for u in chosen] == ["b0", "b1", "b2", "a0", "p0", "a1"]
    assert [u.unit_id for u in balanced_selection(ranked, k=10, k_b=0)] == ["a0", "p0", "a1"]


def test_balanced_selection_stops_at_k() -> None:
    """No more than k units, and it works on scored units too."""
    ranked = [ScoredUnit(_unit(f"a{i}", UnitKind.AKU), 1.0 - i / 100) for i in range(20)]
    chosen = balanced_selection(ranked, k=10, k_b=3)
    assert [s.unit.unit_id for s in chosen] == [f"a{i}" for i in range(10)]
    with pytest.raises(ValueError):
        balanced_selection(ranked, k=-1)


# --- units -----------------------------------------------------------------------------


def test_aku_unit_text_entities_and_deterministic_id() -> None:
    """Answers joined by blank lines, questions only in metadata, filtered entities, same id."""
    facts = ExtractedFacts((QaPair("Who wrote it?", "Mary Shelley wrote Frankenstein."),
                            QaPair("When?", "It appeared in 1818.")),
                           ("Mary Shelley", "The Frankenstein", "1818", "UK", "$5 million"))
    unit = aku_unit(_doc(), 0, facts)
    assert unit.kind is UnitKind.AKU
    assert unit.text == "Mary Shelley wrote Frankenstein.\n\nIt appeared in 1818."
    assert "Who wrote it?" not in unit.text
    assert unit.metadata["questions"] == ["Who wrote it?", "When?"]
    assert unit.entities == ("frankenstein", "mary shelley")
    assert unit.source_doc_ids == ("d1",)
    assert aku_unit(_doc(), 0, facts).unit_id == unit.unit_id
    assert aku_unit(_doc(), 1, facts).unit_id != unit.unit_id


def test_bridge_units_deterministic_ids() -> None:
    """One BRIDGE unit per distinct fact; same input, same ids; another entity, other ids."""
    units = bridge_units("idx", "paris", ["A and B.", "C and D.", "A and B."], ["d2", "d1"])
    assert [u.text for u in units] == ["A and B.", "C and D."]
    assert all(u.kind is UnitKind.BRIDGE and u.entities == ("paris",) for u in units)
    assert units[0].source_doc_ids == ("d1", "d2")
    again = bridge_units("idx", "paris", ["A and B.", "C and D."], ["d1", "d2"])
    assert [u.unit_id for u in again] == [u.unit_id for u in units]
    other = bridge_units("idx", "rome", ["A and B."], ["d1", "d2"])
    assert other[0].unit_id != units[0].unit_id


def test_document_entities_filter() -> None:
    """Entities are lower-cased, stripped, ≥4 characters, no numbers or amounts."""
    chunks = [ExtractedFacts((), (" Paris ", "NYC", "1999", "12.5%")),
              ExtractedFacts((QaPair("q", "a", entities=("Louvre",)),), ("PARIS",))]
    assert document_entities(chunks) == {"paris", "louvre"}


def test_chunk_document_overlaps() -> None:
    """Short documents stay whole; long ones split with or without sentence bounds."""
    assert chunk_document(_doc(text="short")) == ["short"]
    text = "x" * 4500
    chunks = chunk_document(_doc(text=text))
    assert all(len(c) <= 2000 for c in chunks)
    assert [len(c) for c in chunks] == [2000, 2000, 900]  # 1,800-character steps
    sentence = "A sentence of some words. " * 200
    bounds = tuple(Sentence(i * 26, i * 26 + 25) for i in range(200))
    by_sentence = chunk_document(_doc(text=sentence), bounds)
    assert len(by_sentence) > 1 and all(len(c) <= 2000 for c in by_sentence)


# --- end to end against the local test LLM ----------------------------------------------


async def _run_all(base_url: str) -> tuple[ExtractedFacts, tuple[str, ...], str, UsageMeter]:
    client = LlmClient(LlmSettings(base_url=base_url, model="hopindex-test-llm", api_key="k"),
                       InProcessRateLimiter(RateLimits(requests_per_minute=6000)))
    usage = UsageMeter()
    try:
        facts = await client.complete_json(
            stage1_request("Marie Curie", "Marie Curie was born in Warsaw in 1867. "
                                          "Marie Curie won the Nobel Prize in Physics."),
            parse_stage1, usage)
        docs = [DocFacts("d1", "Marie Curie", facts.qa_pairs),
                DocFacts("d2", "Warsaw", (QaPair("What is Warsaw?",
                                                 "Warsaw is the capital of Poland."),))]
        bridging = await client.complete_json(
            stage2_request("warsaw", select_facts("warsaw", docs)), parse_stage2, usage)
        answer = await client.complete(
            answer_request("Where was Marie Curie born?", [u.text for u in bridge_units(
                "idx", "warsaw", bridging, ["d1", "d2"])]), usage)
    finally:
        await client.close()
    return facts, bridging, answer.content, usage


def test_prompts_against_local_test_server() -> None:
    """The real test server answers all three prompts in the shapes the parsers accept."""
    server = LlmTestServer(LlmServerConfig())
    server.start_in_thread()
    try:
        facts, bridging, answer, usage = asyncio.run(_run_all(server.base_url))
    finally:
        server.stop()
    assert len(facts.qa_pairs) == 2
    assert any("Warsaw" in p.answer for p in facts.qa_pairs)
    assert "marie curie" in document_entities([facts])
    assert len(bridging) >= 1
    assert answer.strip() == "Warsaw"  # the test server is deterministic
    assert set(usage.stages) == {"indexrag.stage1", "indexrag.stage2", "answer"}
    assert all(s.calls == 1 for s in usage.stages.values())  # no repair was needed
