"""A real Prometheus scraping real processes reports exactly what hopindex reported.

Two ``hopindex worker`` processes (one prefork, whose pool children run the LLM
stages) with ``--metrics-port``, and ``hopindex serve`` answering queries, all on a
private Redis and the local LLM test server; Prometheus (Debian's binary) scrapes
them every second. After an LLM-mode ingest and queries by every method, its HTTP
API returns the calls, tokens and latencies the job record and the query responses
carry.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hopindex.api.client.opening import open_service_client
from hopindex.core.models import Job, JobState
from hopindex.core.settings import Settings
from hopindex.testing.llm_server import LlmTestServer
from hopindex.testing.redis_server import free_port
from hopindex.testing.workers import READY_MARK, HopindexProcess
from tests.monitoring.prometheus_server import PrometheusServer, PrometheusTools

# Fixtures: a private Redis per module and the LLM test server.
from tests.workers.conftest import (  # noqa: F401
    INDEX,
    distributed_settings,
    embedder_settings,
    hotpot_corpus,
    private_redis,
    start_server,
)

pytestmark = pytest.mark.integration

DOCUMENTS = 24  # two stage-1 batches of 16 and 8: both prefork children may take one
QUESTIONS = ("Which magazine was started first, Arthur's Magazine or First for Women?",
             "Were Scott Derrickson and Ed Wood of the same nationality?")
METHODS = ("indexrag", "ircot", "bridgerag")  # every query method that reads an IndexRAG index
API_READY_MARK = "hopindex API on "


def _worker(settings: Settings, tmp: Path, name: str, queues: str, pool: str,
            port: int) -> HopindexProcess:
    own = replace(settings, metrics_dir=str(tmp / f"metrics-{name}"))
    return HopindexProcess(own, ["worker", "--queues", queues, "--concurrency", "2",
                                 "--pool", pool, "--name", f"{name}@%h",
                                 "--metrics-port", str(port), "--metrics-host", "127.0.0.1"],
                           name=name, log_path=tmp / f"{name}.log", ready_mark=READY_MARK)


def _ask(api_port: int, question: str, method: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{api_port}/v1/indexes/{INDEX}/query",
        data=json.dumps({"question": question, "method": method}).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=60) as answer:
        result: dict[str, Any] = json.load(answer)
    return result


def total(prom: PrometheusServer, job: str, name: str, **labels: str) -> float:
    """``sum(name{labels, job=...})`` now; 0 for a series never recorded."""
    selector = ",".join(f'{k}="{v}"' for k, v in {**labels, "job": job}.items())
    return prom.value(f"sum({name}{{{selector}}})") or 0.0


@pytest.fixture
def processes() -> Iterator[list[HopindexProcess]]:
    started: list[HopindexProcess] = []
    yield started
    for process in reversed(started):
        process.stop()


def _check_worker_series(prom: PrometheusServer, job: Job) -> None:
    """Per stage: requests that succeeded = the job's calls, token counters = its tokens,
    one latency observation per call, cache hits and limiter waits as recorded."""
    def w(name: str, **labels: str) -> float:
        return total(prom, "hopindex-worker", name, **labels)

    for stage in ("indexrag.stage1", "indexrag.stage2"):
        usage = job.llm[stage]
        assert usage.calls > 0, stage
        assert w("hopindex_llm_requests_total", stage=stage, outcome="ok") == usage.calls
        assert w("hopindex_llm_tokens_total", stage=stage, kind="prompt") == usage.prompt_tokens
        assert w("hopindex_llm_tokens_total", stage=stage, kind="completion") == (
            usage.completion_tokens)
        assert w("hopindex_llm_request_duration_seconds_count", stage=stage) == usage.calls
        assert w("hopindex_llm_cache_requests_total", stage=stage, result="hit") == (
            usage.cache_hits)
        assert w("hopindex_ratelimit_wait_seconds_sum", stage=stage) == pytest.approx(
            usage.limiter_wait_s, abs=1e-3)
    batches = -(-job.count("indexrag.stage1").total // 16)  # stage1_batch_docs
    assert w("hopindex_stage_tasks_total", stage="indexrag.stage1", outcome="succeeded") == batches
    assert w("hopindex_stage_task_duration_seconds_count", stage="indexrag.stage1") == batches
    assert w("hopindex_stage_tasks_total", stage="control.finalize", outcome="succeeded") == 1
    assert job.count("indexrag.stage1").done == DOCUMENTS
    assert w("hopindex_documents_ingested_total", index=INDEX, outcome="indexed") == DOCUMENTS
    # The Redis gauges: one exporting process, and they agree with the finished job.
    assert prom.value("count(hopindex_state_exporter)") == 1
    assert prom.value('max(hopindex_jobs{state="succeeded"})') == 1
    assert prom.value('max(hopindex_queue_depth{queue="stage1"})') == 0


def _check_query_series(prom: PrometheusServer, answers: dict[str, list[dict[str, Any]]]
                        ) -> None:
    """Per method: the query histograms' sums and counts are the responses' own numbers."""
    def a(name: str, **labels: str) -> float:
        return total(prom, "hopindex-api", name, **labels)

    for method, results in answers.items():
        usages = [r["usage"] for r in results]
        # The responses round seconds to 6 decimals; the histograms keep every digit.
        close = {"abs": 1e-6 * len(results)}
        assert a("hopindex_query_duration_seconds_count", method=method) == len(results)
        assert a("hopindex_query_duration_seconds_sum", method=method) == pytest.approx(
            sum(r["latency_s"] for r in results), **close)
        assert a("hopindex_query_llm_calls_sum", method=method) == sum(
            u["llm_calls"] for u in usages)
        for kind in ("prompt", "completion"):
            assert a("hopindex_query_tokens_sum", method=method, kind=kind) == sum(
                u[f"{kind}_tokens"] for u in usages)
        assert a("hopindex_query_cache_hits_sum", method=method) == sum(
            u["cache_hits"] for u in usages)
        phases = {p for u in usages for p in u["phases_s"]}
        assert {"embed", "dense_search", "fusion", "load_units", "expand"} <= phases, method
        for phase in phases:
            assert a("hopindex_query_phase_duration_seconds_sum", method=method,
                     phase=phase) == pytest.approx(
                sum(u["phases_s"].get(phase, 0.0) for u in usages), **close), (method, phase)
    # The query process's LLM client saw the same calls, tokens and cache hits.
    usages = [r["usage"] for results in answers.values() for r in results]
    assert a("hopindex_llm_requests_total", outcome="ok") == sum(u["llm_calls"] for u in usages)
    # The query embeddings' tokens count under stage "embed".
    assert a("hopindex_llm_tokens_total", kind="prompt") == sum(
        u["prompt_tokens"] + u["embedding_tokens"] for u in usages)
    assert a("hopindex_llm_tokens_total", kind="prompt", stage="embed") == sum(
        u["embedding_tokens"] for u in usages) > 0
    assert a("hopindex_llm_cache_requests_total", result="hit") == sum(
        u["cache_hits"] for u in usages) > 0


def test_prometheus_reports_what_the_job_record_and_the_responses_report(
        tmp_path: Path, tools: PrometheusTools, private_redis: str,  # noqa: F811
        start_server: Callable[..., LlmTestServer],  # noqa: F811
        processes: list[HopindexProcess]) -> None:
    """Worker series equal the job record's per-stage calls and tokens; API series equal
    the query responses' latency, calls, tokens, cache hits and phase times, for every
    query method; the Redis gauges come from exactly one process."""
    import redis

    redis.Redis.from_url(private_redis).flushdb()
    server = start_server()
    settings = distributed_settings(tmp_path / "dist", server, private_redis,
                                    **embedder_settings(server))
    engines_port, llm_port, api_port = free_port(), free_port(), free_port()
    processes += [
        _worker(settings, tmp_path, "engines", "control,embed", "threads", engines_port),
        _worker(settings, tmp_path, "llm", "stage1,stage2", "prefork", llm_port),
        HopindexProcess(settings, ["serve", "--host", "127.0.0.1", "--port", str(api_port)],
                        name="api", log_path=tmp_path / "api.log", ready_mark=API_READY_MARK)]
    with ExitStack() as stack:
        prom = stack.enter_context(PrometheusServer(tools, tmp_path / "prometheus", {
            "hopindex-worker": [f"127.0.0.1:{engines_port}", f"127.0.0.1:{llm_port}"],
            "hopindex-api": [f"127.0.0.1:{api_port}"]}))
        for process in processes:
            process.wait_ready()
        # A client of a service in this process, whose jobs run on the workers:
        # Client.local would go through the `hopindex serve` that owns the data dir.
        client = stack.enter_context(open_service_client(settings))
        job = client.ingest(INDEX, [hotpot_corpus(tmp_path, limit=DOCUMENTS)])
        assert job.state is JobState.SUCCEEDED and not job.errors, job.reason
        prom.wait_for('sum(hopindex_stage_tasks_total{stage="control.finalize"})',
                      lambda v: v == 1)
        prom.wait_for('sum(hopindex_llm_requests_total{stage="indexrag.stage2",outcome="ok"})',
                      lambda v: v == job.llm["indexrag.stage2"].calls)
        prom.wait_for("count(hopindex_state_exporter)", lambda v: v == 1)
        # The Redis gauges come from whichever worker holds the exporter's lease, scraped
        # on its own clock: its last scrape may predate the job's end by an interval.
        prom.wait_for('max(hopindex_jobs{state="succeeded"})', lambda v: v == 1)
        _check_worker_series(prom, job)

        # The API's searches travel to the engine owner, which keeps running.
        answers = {method: [_ask(api_port, q, method) for q in QUESTIONS]
                   for method in METHODS}
        answers["indexrag"].append(_ask(api_port, QUESTIONS[0], "indexrag"))  # a cache hit
        total = sum(len(r) for r in answers.values())
        prom.wait_for('sum(hopindex_queries_total{job="hopindex-api",outcome="ok"})',
                      lambda v: v == total)
        _check_query_series(prom, answers)
