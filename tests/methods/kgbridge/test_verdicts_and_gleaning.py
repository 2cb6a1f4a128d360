"""kgbridge's reading of a "not the same" verdict and of a gleaning reply, with no
server: what links and what a chunk's graph gains."""

from __future__ import annotations

import pytest

from hopindex.backends.llm.reply_shapes import collecting_notes
from hopindex.core.errors import ReplyShapeError
from hopindex.methods.kgbridge.links import End, Pair, key_record
from hopindex.methods.kgbridge.parsing import parse_extraction, parse_gleaning, parse_verdict
from hopindex.methods.kgbridge.settings import KgBridgeSettings


def _pair(s_emb: float) -> Pair:
    a = End(doc_id="a", key="john smith", name="John Smith", unit_id="ua", summary="x",
            title="A")
    b = End(doc_id="b", key="john smith", name="John Smith", unit_id="ub", summary="y",
            title="B")
    return Pair(key="john smith", a=a, b=b, link_id="l1", s_emb=s_emb)


def test_a_not_the_same_verdict_scores_zero_whatever_its_score() -> None:
    """``same: false`` is S_LLM = 0, even beside a score of 9 (how sure the model is of
    its "no"); ``same: true`` keeps its score."""
    assert parse_verdict({"same": False, "score": 9, "reason": "two people"}).score == 0.0
    assert parse_verdict({"same": True, "score": 9}).score == pytest.approx(0.9)


def test_a_not_the_same_verdict_with_score_nine_links_nothing() -> None:
    """A pair whose summaries embed almost alike (S_emb 0.99) and whose verdict is
    ``{"same": false, "score": 9}``: S_link = 0.3 · 0.99 stays below tau, no link;
    the same pair with ``same: true`` links."""
    settings = KgBridgeSettings()
    pair = _pair(0.99)
    no = parse_verdict({"same": False, "score": 9, "reason": "different people"})
    record = key_record(settings, [pair], set(), {pair.link_id: no})
    assert record["links"] == [] and record["adjudicated"] == 1
    yes = parse_verdict({"same": True, "score": 9, "reason": "one person"})
    (link,) = key_record(settings, [pair], set(), {pair.link_id: yes})["links"]
    assert link["s_llm"] == pytest.approx(0.9)


def test_gleaning_keeps_new_entities_and_relations_to_listed_ones() -> None:
    """What the gleaning adds: entities of keys the extraction did not list, and
    relations between a found entity and a listed one; a listed entity repeated is
    dropped and noted, a relation to an unknown name dropped."""
    first = parse_extraction({"entities": [{"name": "Ada Lovelace"}], "relations": []})
    with collecting_notes() as notes:
        gleaned = parse_gleaning({
            "entities": [{"name": "ADA LOVELACE"}, {"name": "Note G", "type": "work"}],
            "relations": [{"source": "Ada Lovelace", "relation": "wrote", "target": "Note G"},
                          {"source": "Note G", "relation": "cites", "target": "Nobody"}]},
            listed=first.entities)
    assert [(e.name, e.type) for e in gleaned.entities] == [("Note G", "work")]
    assert [(r.source, r.relation, r.target) for r in gleaned.relations] == [
        ("ada lovelace", "wrote", "note g")]
    assert notes.dropped == 2


def test_a_gleaning_reply_with_nothing_missed_is_empty_and_a_bad_one_is_named() -> None:
    """Empty lists are a valid reply (nothing was missed); a reply with no entities key
    fails naming the gleaning reply."""
    first = parse_extraction({"entities": [{"name": "Ada Lovelace"}], "relations": []})
    empty = parse_gleaning({"entities": [], "relations": []}, listed=first.entities)
    assert empty.entities == () and empty.relations == ()
    with pytest.raises(ReplyShapeError, match=r'kgbridge\.glean: the reply has no "entities"'):
        parse_gleaning({"relations": []}, listed=first.entities)
