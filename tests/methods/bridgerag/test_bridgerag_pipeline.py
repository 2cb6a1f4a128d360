"""The ``bridgerag`` pipeline end to end over real embedded engines and the LLM test server.

Call counts come from the server's own counters, vector searches from a counting
wrapper around the real Qdrant Edge adapter.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hopindex.backends.llm.runner import LlmRunner
from hopindex.backends.protocols import UnitFilter
from hopindex.backends.registry import open_llm
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import UnitKind
from hopindex.methods.base import QueryOptions, QueryResult, Retrieval
from hopindex.methods.bridgerag.pit import fuse_pit
from hopindex.methods.bridgerag.records import read_records
from hopindex.methods.registry import create_query
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.methods.bridgerag.conftest import (
    EMPTY,
    FACTS,
    PASSAGES,
    CountingVectorStore,
    Env,
    bridgerag_settings,
)

pytestmark = pytest.mark.integration

_PASSAGE_FILTER = UnitFilter(kinds=(UnitKind.PASSAGE,))


def run(env: Env, question: str, *, index: str = PASSAGES, llm: LlmRunner | None = None,
        k: int = 5, retrieval: Retrieval | None = None,
        **params: str) -> tuple[QueryResult, CountingVectorStore]:
    """One query through a fresh context whose vector store counts its searches."""
    context = env.context(llm=llm) if llm is not None else env.context()
    method = create_query("bridgerag", context)
    result = method.run_query(index, question, QueryOptions(k=k, retrieval=retrieval,
                                                            params=params))
    assert isinstance(context.vectors, CountingVectorStore)
    return result, context.vectors


@contextmanager
def faulty_llm(tmp_path: Path, **config: Any) -> Iterator[LlmRunner]:
    """An LLM runner against a second test server configured with faults."""
    server = LlmTestServer(LlmServerConfig(**config)).start_in_thread()
    runner = open_llm(bridgerag_settings(tmp_path, server, llm_max_attempts=1))
    assert runner is not None
    try:
        yield runner
    finally:
        runner.close()
        server.stop()


def pool_ids(result: QueryResult) -> list[str]:
    return [p["unit_id"] for p in result.trace["pool"]]


def ranked_ids(result: QueryResult) -> list[str]:
    return [p["unit_id"] for p in sorted(result.trace["pool"], key=lambda p: p["rank"])]


def test_a_query_makes_three_calls_and_six_vector_searches(env: Env) -> None:
    """Default bridgerag: SVO, entity and judge calls (one each, as the server counted
    them), 1 hop-1 + 3 SVO + 2 entity searches, and usage that matches the server."""
    question = env.questions[0]["question"]
    env.server.reset()
    result, vectors = run(env, question)
    stats = env.server.stats
    assert stats.by_kind == {"queries": 1, "entity_pair": 1, "scores": 1}
    assert stats.count(Endpoint.CHAT) == 3
    assert vectors.searches == 6
    assert result.usage.llm_calls == 3
    assert result.usage.prompt_tokens == stats.prompt_tokens > 0
    assert result.usage.completion_tokens == stats.completion_tokens > 0
    # The shared phase vocabulary: the SVO and entity calls are "rewrite".
    assert set(result.usage.phases_s) == {"embed", "dense_search", "fusion", "load_units",
                                          "rewrite", "judge", "expand"}
    trace = result.trace
    assert trace["llm_calls"] == 3 and trace["vector_searches"] == 6
    assert len(trace["svo_queries"]) == 3 and len(set(trace["svo_queries"])) == 3
    assert len(trace["entities"]) == 2 and trace["entities"][0] != trace["entities"][1]
    assert trace["judge"] == {"status": "scored", "site": "in_process", "error": "",
                              "unscored": 0}
    assert trace["ranked_by"] == "C" and trace["degraded"] == [] and result.degraded == []


def test_trace_is_a_complete_decision_record(env: Env) -> None:
    """The trace names the bridge (the top dense hit), the pool (≤ 20 distinct units,
    each with judge, SVO and fused scores), and a top-5 that follows the fused ranking;
    the fused scores are exactly PIT fusion of the recorded scores at alpha 0.1."""
    question = env.questions[1]["question"]
    result, _ = run(env, question)
    trace = result.trace
    context = env.context()
    top1 = context.vectors.search_vectors(PASSAGES, context.embedder.embed_query(question), 1,
                                          _PASSAGE_FILTER)
    assert [b["unit_id"] for b in trace["bridges"]] == [top1[0].unit_id]
    pool = trace["pool"]
    assert 5 <= len(pool) <= 20 and len(set(pool_ids(result))) == len(pool)
    assert all(p["judge_score"] is not None and 0 <= p["judge_score"] <= 10 for p in pool)
    expected = fuse_pit([p["judge_score"] for p in pool], [p["svo_score"] for p in pool], 0.1)
    assert [p["fused"] for p in pool] == pytest.approx(expected, abs=1e-6)
    assert sorted(p["rank"] for p in pool) == list(range(1, len(pool) + 1))
    assert len(trace["top"]) == len(result.passages) == 5
    assert [t["doc_id"] for t in trace["top"]] == [p.doc_id for p in result.passages]
    assert trace["top"][0]["unit_id"] == ranked_ids(result)[0]
    fused = [p["fused"] for p in sorted(pool, key=lambda p: p["rank"])]
    assert fused == sorted(fused, reverse=True)


def test_merged_extraction_makes_two_calls(env: Env) -> None:
    """extraction=merged asks for the SVO queries and the entities in one call: 2 calls,
    still 6 vector searches, the same queries and entities as the separate calls."""
    question = env.questions[0]["question"]
    separate, _ = run(env, question)
    env.server.reset()
    merged, vectors = run(env, question, extraction="merged")
    assert env.server.stats.by_kind == {"queries": 1, "scores": 1}
    assert merged.usage.llm_calls == 2 and vectors.searches == 6
    assert merged.trace["entities"] == separate.trace["entities"]
    assert merged.trace["svo_queries"] == separate.trace["svo_queries"]
    assert merged.usage.phases_s["rewrite"] > 0


def test_conditions_share_the_pool_and_differ_in_ranking(env: Env) -> None:
    """A ranks the pool by SVO similarity without a judge call; B judges without the
    bridge, C with it: one pool for all three, and the bridge changes the judge's scores."""
    question = env.questions[2]["question"]
    env.server.reset()
    a, _ = run(env, question, condition="A")
    assert env.server.stats.by_kind == {"queries": 1, "entity_pair": 1}
    b, _ = run(env, question, condition="B")
    c, _ = run(env, question, condition="c")
    assert pool_ids(a) == pool_ids(b) == pool_ids(c)
    assert a.usage.llm_calls == 2 and b.usage.llm_calls == c.usage.llm_calls == 3
    assert a.trace["judge"]["status"] == "skipped" and a.degraded == []
    assert all(p["judge_score"] is None for p in a.trace["pool"])
    svo_order = sorted(a.trace["pool"], key=lambda p: -p["svo_score"])
    assert [p["svo_score"] for p in svo_order] == [
        p["svo_score"] for p in sorted(a.trace["pool"], key=lambda p: p["rank"])]
    assert (b.trace["ranked_by"], c.trace["ranked_by"]) == ("B", "C")
    assert ([p["judge_score"] for p in b.trace["pool"]]
            != [p["judge_score"] for p in c.trace["pool"]])


def test_two_bridges_condition_the_judge(env: Env) -> None:
    """bridges=2 keeps the top two hop-1 units as bridges; calls and searches unchanged."""
    question = env.questions[3]["question"]
    env.server.reset()
    result, vectors = run(env, question, bridges="2")
    bridges = result.trace["bridges"]
    assert len(bridges) == 2 and bridges[0]["unit_id"] != bridges[1]["unit_id"]
    assert bridges[0]["score"] >= bridges[1]["score"]
    assert result.usage.llm_calls == 3 and vectors.searches == 6


def test_bridge_first_pins_the_bridge(env: Env) -> None:
    """bridge_position=first returns the bridge's passage at rank 1, then the pool."""
    question = env.questions[4]["question"]
    result, _ = run(env, question, bridge_position="first")
    assert result.passages[0].via_unit_id == result.trace["bridges"][0]["unit_id"]


def test_hybrid_hop1_keeps_six_vector_searches(env: Env) -> None:
    """Hybrid hop-1 adds a BM25 search and fusion; the vector searches stay 1 + 5."""
    question = env.questions[5]["question"]
    result, vectors = run(env, question, retrieval=Retrieval.HYBRID)
    assert result.trace["retrieval"] == "hybrid"
    assert "keyword_search" in result.usage.phases_s
    assert vectors.searches == 6 and result.trace["vector_searches"] == 6
    assert len(result.passages) == 5


def test_works_over_an_indexrag_index(env: Env) -> None:
    """Over IndexRAG's AKUs and bridging facts the pool holds those units and the answer
    comes back as source passages (documents), three calls as always."""
    result, vectors = run(env, "Where was the wife of Pierre Curie born?", index=FACTS)
    state = env.client.service.backends.state
    units = state.get_units(FACTS, pool_ids(result))
    assert units and {u.kind for u in units} <= {UnitKind.AKU, UnitKind.BRIDGE}
    assert result.passages and all(p.doc_id and p.text for p in result.passages)
    assert result.usage.llm_calls == 3 and vectors.searches == 6


def test_svo_scores_are_cosines_to_the_svo_queries(env: Env) -> None:
    """A candidate an SVO search returned keeps the best cosine those searches gave it
    (the paper's union_max over each query's top 10); one found only by entity search
    gets its max cosine to the queries computed directly from its stored vector. With
    svo_k=1 the SVO searches return three units at most, so the rest take that path."""
    context = env.context()
    direct = 0
    for record in env.questions[:4]:
        for svo_k in ("10", "1"):
            result, _ = run(env, record["question"], svo_k=svo_k)
            queries = context.embedder.embed_texts(result.trace["svo_queries"])
            units = {u.unit_id: u for u in env.client.service.backends.state.get_units(
                PASSAGES, pool_ids(result))}
            for entry in result.trace["pool"]:
                cosines = queries @ context.embedder.embed_query(units[entry["unit_id"]].text)
                assert np.min(np.abs(cosines - entry["svo_score"])) < 1e-4
                if svo_k == "1" and "svo" not in entry["found_by"]:
                    assert entry["svo_score"] == pytest.approx(float(np.max(cosines)), abs=1e-4)
                    direct += 1
    assert direct > 0


def test_direct_cosines_survive_a_lost_vector(env: Env) -> None:
    """When the store has no vector for a candidate, its text is embedded instead: the
    same SVO scores (the embedder made the stored vectors from the same texts)."""
    question = env.questions[5]["question"]
    kept, _ = run(env, question, svo_k="1")
    context = env.context(vectors=CountingVectorStore(env.client.service.backends.vectors,
                                                      lose_vectors=True))
    lost = create_query("bridgerag", context).run_query(
        PASSAGES, question, QueryOptions(params={"svo_k": "1"}))
    assert any("svo" not in p["found_by"] for p in kept.trace["pool"])
    assert [p["svo_score"] for p in lost.trace["pool"]] == pytest.approx(
        [p["svo_score"] for p in kept.trace["pool"]], abs=1e-5)


def test_judge_reply_unparseable_falls_back_to_condition_a(env: Env, tmp_path: Path) -> None:
    """A judge reply that stays invalid JSON after the repair attempt: the query ranks
    exactly as condition A and says so (ranked by A, the judge degraded, its status
    unparseable). A query makes no repair call: its deadline is for the user."""
    question = env.questions[0]["question"]
    reference, _ = run(env, question, condition="A")
    with faulty_llm(tmp_path, invalid_json_marker='"scores"') as llm:
        result, _ = run(env, question, llm=llm)
    assert result.trace["ranked_by"] == "A"
    assert result.trace["judge"]["status"] == "unparseable"
    assert [d.step for d in result.degraded] == ["judge"]
    assert result.trace["degraded"] == [d.as_dict() for d in result.degraded]
    assert result.usage.llm_calls == 3  # svo, entities, judge: no repair call in a query
    assert ranked_ids(result) == ranked_ids(reference)
    assert [p.doc_id for p in result.passages] == [p.doc_id for p in reference.passages]


def test_svo_reply_unparseable_uses_the_question(env: Env, tmp_path: Path) -> None:
    """An unusable SVO reply: the question is the one SVO query (one search instead of
    three); the query's later LLM steps are skipped (the query policy: no call after
    one failed), so no entity search and condition A, each step named."""
    question = env.questions[1]["question"]
    with faulty_llm(tmp_path, invalid_json_marker='"queries"') as llm:
        result, vectors = run(env, question, llm=llm)
    trace = result.trace
    assert trace["svo_queries"] == [question]
    assert [d.step for d in result.degraded] == ["svo_queries", "entities", "judge"]
    assert trace["judge"]["status"] == "failed" and trace["ranked_by"] == "A"
    assert vectors.searches == 1 + 1
    with faulty_llm(tmp_path, invalid_json_marker='"queries"') as llm:
        merged, vectors = run(env, question, llm=llm, extraction="merged")
    assert merged.trace["entities"] == ["", ""] and vectors.searches == 2
    assert [d.step for d in merged.degraded] == ["svo_entities", "judge"]
    assert merged.trace["judge"]["status"] == "failed"


def test_provider_failing_every_call_still_answers(env: Env, tmp_path: Path) -> None:
    """With every call failing (500s, one attempt each) the query still returns the
    question's own neighbourhood, ranked as condition A, each fallback named."""
    question = env.questions[2]["question"]
    with faulty_llm(tmp_path, fail_500=1.0) as llm:
        result, vectors = run(env, question, llm=llm)
    assert [d.step for d in result.degraded] == ["svo_queries", "entities", "judge"]
    assert result.trace["judge"]["status"] == "failed" and result.trace["ranked_by"] == "A"
    assert result.usage.llm_calls == 0 and vectors.searches == 2
    assert len(result.passages) == 5


def test_empty_index_returns_nothing_without_llm_calls(env: Env) -> None:
    """No hop-1 hit means no bridge: an empty result, no LLM call, one search."""
    result, vectors = run(env, "Who founded the company?", index=EMPTY)
    assert result.passages == [] and result.trace["bridges"] == []
    assert result.usage.llm_calls == 0 and vectors.searches == 1


def test_records_persist_as_jsonl_through_the_service(env: Env) -> None:
    """record=jsonl appends the decision record to DATA_DIR/decisions/INDEX.jsonl, the
    same record the query returns as its trace."""
    question = env.questions[3]["question"]
    result = env.client.query(PASSAGES, question, method="bridgerag", k=5,
                              options=QueryOptions(params={"record": "jsonl"}))
    path = Path(result.trace["persisted_to"])
    assert path == env.client.settings.data_dir / "decisions" / f"{PASSAGES}.jsonl"
    saved = read_records(path)[-1]
    assert saved == result.trace
    for key in ("bridges", "entities", "pool", "top", "judge", "svo_queries"):
        assert saved[key], key
    unpersisted, _ = run(env, question)
    assert unpersisted.trace["persisted_to"] is None


def test_bad_parameters_name_the_parameter(env: Env) -> None:
    """Bad values fail before any work, naming params.<name>."""
    question = env.questions[0]["question"]
    for params, where in (({"alpha": "1.5"}, "params.alpha"),
                          ({"condition": "D"}, "params.condition"),
                          ({"pool": "20"}, "params.pool")):
        with pytest.raises(InvalidInputError) as raised:
            run(env, question, **params)
        assert raised.value.where == where
