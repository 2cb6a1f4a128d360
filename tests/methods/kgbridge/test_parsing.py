"""kgbridge's pure parts: reply validation (bad shapes named), graph merging, core
entities, link ids and scores, and the settings' bounds."""

from __future__ import annotations

from typing import Any

import pytest

from hopindex.backends.llm.reply_shapes import collecting_notes
from hopindex.core.errors import ConfigError, LlmOutputError, ReplyShapeError
from hopindex.methods.kgbridge.graphs import core_entities, merge_chunks
from hopindex.methods.kgbridge.links import cosine, link_id, s_link
from hopindex.methods.kgbridge.parsing import (
    entity_key,
    parse_doc_summary,
    parse_extraction,
    parse_summaries,
    parse_verdict,
)
from hopindex.methods.kgbridge.settings import KgBridgeSettings


def _entity(name: str, description: str = "", kind: str = "person") -> dict[str, Any]:
    return {"name": name, "type": kind, "description": description}


def test_entity_keys_fold_case_spacing_and_compatibility_forms() -> None:
    """Names compare by key: case, spacing and NFKC forms do not split an entity."""
    assert entity_key("  Ada\tLOVELACE ") == entity_key("ada lovelace") == "ada lovelace"
    assert entity_key("\uff21\uff22\uff23") == "abc"  # fullwidth ABC


def test_extraction_keeps_relations_between_listed_entities_only() -> None:
    """A relation to a name the chunk did not list, or with a blank relation, is
    dropped; an entity repeated under one key is merged; blank names are dropped."""
    graph = parse_extraction({
        "entities": [_entity("Ada Lovelace", "A writer."), _entity(" "),
                     _entity("ada  lovelace", "A mathematician.", "writer"),
                     _entity("Analytical Engine", kind="")],
        "relations": [{"source": "ADA LOVELACE", "relation": "wrote for",
                       "target": "Analytical Engine"},
                      {"source": "Ada Lovelace", "relation": "met", "target": "Babbage"},
                      {"source": "Ada Lovelace", "relation": " ", "target": "Analytical Engine"},
                      {"source": "ada lovelace", "relation": "wrote for",
                       "target": "analytical engine"}]})
    assert [(e.name, e.type, e.description) for e in graph.entities] == [
        ("Ada Lovelace", "person", "A writer. A mathematician."),
        ("Analytical Engine", "entity", "")]
    assert [(r.source, r.relation, r.target) for r in graph.relations] == [
        ("ada lovelace", "wrote for", "analytical engine")]
    assert parse_extraction({"entities": []}).relations == ()


@pytest.mark.parametrize(("reply", "message"), [
    ([], "kgbridge.extract: expected a JSON object"),
    ({"relations": []}, 'no "entities" key'),
    ({"entities": {}}, "kgbridge.extract entities: expected a list, got dict"),
    ({"entities": ["Ada"]}, "kgbridge.extract entities: no usable element among 1"),
    ({"entities": [{"type": "person"}, None]}, "entities: no usable element among 2"),
    ({"entities": [{"name": [3]}]}, "entities: no usable element among 1"),
    ({"entities": [], "relations": [{"source": "a", "target": "b"}]},
     "kgbridge.extract relations: no usable element among 1"),
    ({"entities": [], "relations": "none"}, "relations: expected a list, got str"),
])
def test_bad_extraction_shapes_are_named(reply: Any, message: str) -> None:
    """A reply that is not the object asked for, or a list none of whose elements fit,
    raises an error the repair attempt can show the model, naming the reply kind and
    the list; it is an ``LlmOutputError`` and a ``ValueError``."""
    with pytest.raises(ReplyShapeError, match=message) as raised:
        parse_extraction(reply)
    assert isinstance(raised.value, LlmOutputError) and isinstance(raised.value, ValueError)


def test_extraction_drops_misfit_elements_and_keeps_the_rest() -> None:
    """A null entity, one without a name, a relation missing its target and a null
    relation are dropped and noted; a null type or description is the default; the
    graph's own drops (an unlisted end, a blank name) are noted under their reason."""
    with collecting_notes() as notes:
        graph = parse_extraction({
            "entities": [None, {"type": "person"}, _entity("Ada", "A writer."),
                         {"name": "Engine", "type": None, "description": None},
                         _entity("  ")],
            "relations": [None, {"source": "Ada", "relation": "built"},
                          {"source": "Ada", "relation": "wrote for", "target": "Engine"},
                          {"source": "Ada", "relation": "met", "target": "Babbage"}],
            "notes": "extra keys are ignored"})
    assert [(e.name, e.type, e.description) for e in graph.entities] == [
        ("Ada", "person", "A writer."), ("Engine", "entity", "")]
    assert [(r.source, r.relation, r.target) for r in graph.relations] == [
        ("ada", "wrote for", "engine")]
    assert notes.dropped == 6
    assert notes.reasons["kgbridge.extract entities: blank name"] == 1
    assert notes.reasons["kgbridge.extract relations: source or target is not a listed "
                         "entity"] == 1
    assert parse_extraction({"entities": [_entity("Ada")], "relations": None}).relations == ()


def test_summaries_are_keyed_by_entity_and_blank_ones_left_out() -> None:
    """The reply's names are matched by key; a blank summary counts as omitted, one
    that is not text is dropped and noted; a map of no text at all fails."""
    assert parse_summaries({"summaries": {"Ada  Lovelace": " A writer.\n", "X": ""}}) == {
        "ada lovelace": "A writer."}
    with collecting_notes() as notes:
        assert parse_summaries({"summaries": {"Ada": 3, "Byron": None, "Engine": "A machine."}}
                               ) == {"engine": "A machine."}
    assert notes.dropped == 2
    with pytest.raises(ReplyShapeError, match=r'\{"summaries"'):
        parse_summaries({"Ada": "A writer."})
    with pytest.raises(ReplyShapeError, match="summaries must be an object"):
        parse_summaries({"summaries": ["A writer."]})
    with pytest.raises(ReplyShapeError, match="no summary is text among 1"):
        parse_summaries({"summaries": {"Ada": 3}})
    assert parse_summaries({"summaries": {}}) == {}


def test_a_document_summary_must_not_be_empty() -> None:
    """The text reply on one line; an empty one is an error."""
    assert parse_doc_summary("  One.\n Two. ") == "One. Two."
    with pytest.raises(ReplyShapeError, match="empty"):
        parse_doc_summary(" \n")


def test_a_verdict_score_is_clamped_and_scaled() -> None:
    """score/10 is S_LLM, clamped to 0-10 first; the reason may be missing."""
    assert parse_verdict({"same": True, "score": 9, "reason": "x"}).score == pytest.approx(0.9)
    assert parse_verdict({"same": True, "score": 14}).score == 1.0
    assert parse_verdict({"same": False, "score": -3}).score == 0.0
    assert parse_verdict({"same": False, "score": 2.5}).reason == ""
    assert parse_verdict({"same": True, "score": 1}).score == pytest.approx(0.1)


def test_a_verdict_read_leniently_counts_what_it_forgave() -> None:
    """A score as a numeric string and "true" for true are read (coerced); a score on
    0-1 where 0-10 was asked is rescaled, noted as such."""
    with collecting_notes() as notes:
        verdict = parse_verdict({"same": "true", "score": "8", "reason": None})
    assert (verdict.same, verdict.reason) == (True, "")
    assert verdict.score == pytest.approx(0.8)
    assert notes.coerced == 1 and notes.rescaled == 0
    with collecting_notes() as notes:
        assert parse_verdict({"same": True, "score": 0.85}).score == pytest.approx(0.85)
    assert notes.rescaled == 1


@pytest.mark.parametrize(("reply", "message"), [
    ("yes", "expected a JSON object"),
    ({"score": 9}, "kgbridge.adjudicate: same: Field required"),
    ({"same": "perhaps", "score": 9}, "same: Input should be a valid boolean"),
    ({"same": True}, "score: Field required"),
    ({"same": True, "score": "high"}, "score: Input should be a valid number"),
    ({"same": True, "score": True}, "score: Value error, a boolean is not a number"),
    ({"same": True, "score": float("nan")}, "score: Input should be a finite number"),
    ({"same": True, "score": 9, "reason": 1}, r"reason\.str: Input should be a valid string"),
])
def test_bad_verdicts_are_named(reply: Any, message: str) -> None:
    """Each bad verdict names the reply kind and the key at fault."""
    with pytest.raises(ReplyShapeError, match=message):
        parse_verdict(reply)


def test_chunks_merge_into_one_graph_per_document() -> None:
    """An entity of two chunks is one node (first name and type, descriptions joined,
    both chunks); a triple stated twice keeps its first chunk."""
    first = parse_extraction({"entities": [_entity("Ada", "A writer"), _entity("Engine")],
                              "relations": [{"source": "Ada", "relation": "r",
                                             "target": "Engine"}]})
    second = parse_extraction({"entities": [_entity("ADA", "A mathematician", "poet"),
                                            _entity("Engine")],
                               "relations": [{"source": "ada", "relation": "r",
                                              "target": "engine"}]})
    draft = merge_chunks([first, second])
    ada = draft.entities["ada"]
    assert (ada.name, ada.type, ada.description, ada.chunks) == (
        "Ada", "person", "A writer. A mathematician.", [0, 1])
    assert draft.relations == [{"source": "ada", "relation": "r", "target": "engine",
                                "chunk": 0}]


def test_core_entities_are_the_most_connected_first_at_most_ten() -> None:
    """By degree, ties in graph order, ten at most."""
    keys = [f"k{n}" for n in range(12)]
    relations = [{"source": "k5", "target": "k1"}, {"source": "k5", "target": "k2"}]
    core = core_entities(keys, relations)
    assert core[:4] == ["k5", "k1", "k2", "k0"] and len(core) == 10


def test_a_link_id_is_the_same_whichever_end_comes_first() -> None:
    """Stable across rebuilds and pair order; different ends give another id."""
    assert link_id(("a", "x"), ("b", "x")) == link_id(("b", "x"), ("a", "x"))
    assert link_id(("a", "x"), ("b", "x")) != link_id(("a", "x"), ("c", "x"))


def test_s_link_weighs_the_model_against_the_cosine() -> None:
    """S_link = alpha·S_LLM + (1 - alpha)·S_emb, with the cosine of the two vectors."""
    settings = KgBridgeSettings()
    assert s_link(settings, 0.9, 0.5) == pytest.approx(0.78)
    assert cosine([1.0, 0.0], [2.0, 0.0]) == 1.0 and cosine([1.0, 0.0], [0.0, 0.0]) == 0.0
    assert settings.lossless_bound() == pytest.approx(0.0)
    assert KgBridgeSettings(alpha=0.5, tau=0.8).lossless_bound() == pytest.approx(0.6)


@pytest.mark.parametrize(("values", "variable"), [
    ({"min_docs": 1}, "HOPINDEX_KGBRIDGE_MIN_DOCS"),
    ({"min_docs": 4, "max_docs": 3}, "HOPINDEX_KGBRIDGE_MAX_DOCS"),
    ({"alpha": 1.5}, "HOPINDEX_KGBRIDGE_ALPHA"),
    ({"tau": -0.1}, "HOPINDEX_KGBRIDGE_TAU"),
    ({"min_embedding_score": 2.0}, "HOPINDEX_KGBRIDGE_MIN_EMBEDDING_SCORE"),
])
def test_settings_out_of_range_name_the_variable(values: dict[str, Any], variable: str) -> None:
    """A bad setting stops the process naming ``HOPINDEX_KGBRIDGE_*``."""
    with pytest.raises(ConfigError, match=variable):
        KgBridgeSettings(**values)
