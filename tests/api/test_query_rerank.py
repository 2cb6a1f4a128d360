"""The reranker stage, through the service every door uses: every method takes
``rerank=on|off``; off gives exactly what the same query gives with no reranker
configured; on, the retrievals each method reranks are reordered by the ``/rerank``
service (the test server's lexical overlap), shown in the trace with the fused places
and scores before; a reranker that fails leaves the fused order and a ``rerank`` note,
never a failed query; ``hopindex eval`` compares with and without in one report.

The indexes are built once (Curie corpus, one per index method); the reranker is the
LLM test server's ``/v1/rerank``.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from hopindex.api.client.local import LocalClient
from hopindex.api.evaluate import run_eval_command
from hopindex.api.method_options import option_schema
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import JobState
from hopindex.methods.base import QueryOptions, QueryResult
from hopindex.methods.registry import query_method_names
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.conftest import CURIE_CORPUS, ingest_documents, llm_settings, local_client

pytestmark = pytest.mark.integration

QUESTION = "Where was the wife of Pierre Curie born?"
INDEXES = {"plain": "extractive", "facts": "indexrag", "qa": "compactrag", "trees": "sirerag",
           "kg": "kgbridge"}
# Query method → (its index, the steps it reranks on this question).
RERANKED = {
    "naive": ("plain", ["retrieval"]),
    "extractive": ("plain", ["retrieval"]),
    "hops": ("plain", ["seed"]),
    "indexrag": ("facts", ["retrieval"]),
    "ircot": ("facts", ["retrieval"]),  # and one per reasoning step it takes
    "bridgerag": ("facts", ["hop1"]),
    "compactrag": ("qa", ["sub-question 1"]),
    "sirerag": ("trees", ["retrieval"]),
    "kgbridge": ("kg", []),
}
SAMPLE = Path(__file__).resolve().parents[2] / "hopindex" / "sample" / "hotpotqa-100"


@pytest.fixture(scope="module")
def llm() -> Iterator[LlmTestServer]:
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, llm: LlmTestServer) -> Path:
    data_dir = tmp_path_factory.mktemp("rerank") / "data"
    with local_client(llm_settings(data_dir, llm)) as client:
        for index, method in INDEXES.items():
            job = ingest_documents(client, index, CURIE_CORPUS, method=method)
            assert job.state is JobState.SUCCEEDED and not job.errors, job.reason
    return data_dir


def open_client(built: Path, tmp_path: Path, llm: LlmTestServer, name: str,
                reranker: LlmTestServer | None) -> LocalClient:
    """A client over a copy of the indexes; its reranker ``reranker``'s /v1/rerank."""
    data_dir = tmp_path / name
    shutil.copytree(built, data_dir)
    extra: dict[str, object] = {}
    if reranker is not None:
        extra = {"rerank_url": f"{reranker.root_url}/v1/rerank", "rerank_model": "lexical",
                 "rerank_timeout_s": 2.0}
    return local_client(llm_settings(data_dir, llm, **extra))


def untimed(value: object) -> object:
    """``value`` without what differs from run to run: times, clocks, the id of a
    decision record (bridgerag keeps one per query)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items()
                if k not in {"created_at", "record_id", "rerank"} and not k.endswith("_s")}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def shown(result: QueryResult) -> tuple[object, ...]:
    """What a caller sees of a result, its timings aside."""
    trace = untimed(result.trace)
    return (result.answer, [(p.doc_id, p.score, p.via_unit_id) for p in result.passages],
            [d.as_dict() for d in result.degraded], json.dumps(trace, sort_keys=True,
                                                              default=str))


def ask(client: LocalClient, method: str, **params: str) -> QueryResult:
    index, _ = RERANKED[method]
    return client.query(index, QUESTION, method=method, k=4,
                        options=QueryOptions(k=4, params=params))


def test_every_method_takes_rerank_and_off_is_todays_result(
        built: Path, tmp_path: Path, llm: LlmTestServer) -> None:
    """Every method's option schema lists rerank; with a reranker configured,
    ``rerank=off`` gives each method exactly the result of a service with none, and no
    request reaches /rerank."""
    assert all("rerank" in option_schema(m)["properties"] for m in query_method_names())
    reranker = LlmTestServer(LlmServerConfig()).start_in_thread()
    try:
        with open_client(built, tmp_path, llm, "bare", None) as bare, \
                open_client(built, tmp_path, llm, "off", reranker) as off:
            for method in RERANKED:
                assert shown(ask(off, method, rerank="off")) == shown(ask(bare, method)), method
        assert reranker.stats.count(Endpoint.RERANK) == 0
    finally:
        reranker.stop()


def test_rerank_on_reorders_what_each_method_reranks(
        built: Path, tmp_path: Path, llm: LlmTestServer) -> None:
    """On by default once configured: each method's trace lists its reranked steps,
    each pass ordered by the reranker's score with the fused rank and score before; a
    retrieval-only method's passages follow that order."""
    reranker = LlmTestServer(LlmServerConfig()).start_in_thread()
    try:
        with open_client(built, tmp_path, llm, "on", reranker) as client:
            for method, (_, steps) in RERANKED.items():
                result = ask(client, method)
                assert "rerank" not in [d.step for d in result.degraded], method
                passes = result.trace.get("rerank", {}).get("passes", [])
                assert [p["step"] for p in passes][:len(steps)] == steps, method
                if not steps:
                    assert "rerank" not in result.trace
                for done in passes:
                    scores = [o["score"] for o in done["order"]]
                    assert scores == sorted(scores, reverse=True), method
                if steps:
                    assert result.usage.phases_s["rerank"] > 0
            naive = ask(client, "naive")
            top = naive.trace["rerank"]["passes"][0]["order"][0]
            assert naive.passages[0].via_unit_id == top["unit_id"]
            assert naive.passages[0].score == pytest.approx(top["score"], abs=1e-6)
        assert reranker.stats.count(Endpoint.RERANK) > 0
    finally:
        reranker.stop()


def test_a_failing_reranker_leaves_the_fused_order_with_a_note(
        built: Path, tmp_path: Path, llm: LlmTestServer) -> None:
    """Every /rerank request fails (500): the query answers with the fused order (what
    rerank=off gives) and a ``rerank`` degradation; a method's later retrievals skip
    the reranker instead of waiting for it again."""
    failing = LlmTestServer(LlmServerConfig(fail_500=1.0)).start_in_thread()
    try:
        with open_client(built, tmp_path, llm, "failing", failing) as client:
            for method in ("naive", "indexrag", "ircot"):
                result = ask(client, method)
                off = ask(client, method, rerank="off")
                assert [d.step for d in result.degraded] == ["rerank"], method
                assert "the reranker failed" in result.degraded[0].reason
                assert [p.doc_id for p in result.passages] == [p.doc_id for p in off.passages]
                assert result.answer == off.answer
                passes = result.trace["rerank"]["passes"]
                assert all("failed" in p for p in passes)
                assert all(p["failed"].startswith("skipped") for p in passes[1:])
    finally:
        failing.stop()


def test_rerank_values_are_checked(built: Path, tmp_path: Path, llm: LlmTestServer) -> None:
    """``rerank=on`` without a reranker configured, or a value not on/off, is refused
    naming params.rerank; rerank needs no method named (it means the same to all)."""
    with open_client(built, tmp_path, llm, "none", None) as client:
        for value, message in (("on", "no reranker is configured"),
                               ("sideways", "must be one of on, off")):
            with pytest.raises(InvalidInputError, match=message) as refused:
                ask(client, "naive", rerank=value)
            assert refused.value.where == "params.rerank"
        result = client.query("plain", QUESTION, options=QueryOptions(params={"rerank": "off"}))
        assert result.passages


def test_eval_compares_with_and_without_the_reranker(
        built: Path, tmp_path: Path, llm: LlmTestServer) -> None:
    """``hopindex eval --method M:rerank=on --method M:rerank=off``: one report, a row
    for each, both answered over the same index."""
    dataset = tmp_path / "hotpot2.json"
    dataset.write_text(json.dumps(json.loads((SAMPLE / "questions.json").read_text())[:2]))
    reranker = LlmTestServer(LlmServerConfig()).start_in_thread()
    try:
        with open_client(built, tmp_path, llm, "eval", reranker) as client:
            report = run_eval_command(
                client.service, Console(file=io.StringIO()), index="hq",
                dataset_path=dataset, corpus_paths=[], fmt="hotpotqa",
                methods=["naive:rerank=on", "naive:rerank=off"], limit=0, json_out=None,
                index_methods=["extractive"])
        rows = {m.method: m for m in report.methods}
        assert set(rows) == {"naive:rerank=on", "naive:rerank=off"}
        assert all(m.n_questions == 2 for m in rows.values())
        assert reranker.stats.count(Endpoint.RERANK) >= 2
    finally:
        reranker.stop()
