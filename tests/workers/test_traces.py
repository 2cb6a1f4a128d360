"""Traces across processes: real workers export their spans over OTLP/HTTP to a receiver
on loopback, this process keeps its own in the SDK's in-memory exporter, and the two
together make one trace per job and per query."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import redis
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hopindex import Client
from hopindex.api.http.keys import KeyRing, parse_env_keys
from hopindex.api.http.server import BackgroundServer
from hopindex.core.models import JobState
from hopindex.core.tracing import span
from hopindex.core.tracing.span_ids import step_span_id
from hopindex.readers import ReadResult
from hopindex.scheduler.task_names import QUERY_TASK
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from hopindex.testing.otlp_receiver import OtlpReceiver, ReceivedSpan
from hopindex.testing.workers import WorkerProcess
from hopindex.workers.queues import ENGINE_TASK
from tests.methods.bridgerag.conftest import bridgerag_settings, hotpot_documents, hotpot_questions
from tests.tracing import one, traced  # noqa: F401  # traced: a fixture
from tests.workers.conftest import (
    _UNACKED,
    INDEX,
    JOB_TIMEOUT_S,
    Cluster,
    embedder_settings,
    hotpot_corpus,
    kill_mid_task,
    local_client,
    wait_until,
)

pytestmark = pytest.mark.integration

LLM_QUEUES, LLM_SLOTS = ("stage1", "stage2"), 2
KEY = "traces-test-key-0123456789abcdef"


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    """A collector on loopback, and the OTEL_* variables every worker started after this
    inherits: tracing on, every span kept, exported within a fifth of a second."""
    with OtlpReceiver() as listening:
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", listening.endpoint)
        monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")
        yield listening


def _in_flight(broker_url: str, queues: tuple[str, ...]) -> set[str]:
    """Ids of the tasks of ``queues`` some worker has taken and not acknowledged."""
    broker = redis.Redis.from_url(broker_url)
    try:
        return {json.loads(raw)[0]["headers"]["id"] for raw in broker.hvals(_UNACKED)
                if json.loads(raw)[2] in queues}
    finally:
        broker.close()


def test_an_ingest_job_on_workers_is_one_trace_and_a_killed_task_joins_it(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster], receiver: OtlpReceiver,
        traced: InMemorySpanExporter) -> None:  # noqa: F811  # the fixture
    """An indexrag ingest on real workers, its stage-1 worker SIGKILLed mid-task: every
    task span (stage 1, embed, stage 2, the callbacks) is in the job's trace under its
    step's span, whichever worker ran it; the tasks the killed worker held run again on
    its replacement, in the same trace under the same step; the LLM requests are spans
    with the gen_ai attributes under their tasks."""
    server = start_server(latency_s=0.02)
    corpus = hotpot_corpus(tmp_path, limit=64)
    c = cluster(server, stage1_batch_docs=4, stage2_batch_entities=16,
                job_stall_timeout_s=40, reaper_interval_s=2, **embedder_settings(server))
    c.start("engines", "control,embed", concurrency=2)
    victim = c.start("llm-1", ",".join(LLM_QUEUES), concurrency=LLM_SLOTS, pool="threads")
    with local_client(c.settings) as client:
        with span("submitter"):
            job = client.ingest(INDEX, [corpus], wait=False)
        assert job.trace_id
        wait_until(client, job.job_id, lambda j: 0 < j.count("indexrag.stage1").done
                   < j.count("indexrag.stage1").total // 2)
        kill_mid_task(victim, c.settings.broker_url, LLM_QUEUES, LLM_SLOTS)
        killed = _in_flight(c.settings.broker_url, LLM_QUEUES)
        assert killed, "the kill found no task in flight"
        c.start("llm-2", ",".join(LLM_QUEUES), concurrency=LLM_SLOTS, pool="threads")
        c.start_beat()
        job = client.jobs.wait_for_job(job.job_id, timeout_s=JOB_TIMEOUT_S)
    assert job.state is JobState.SUCCEEDED
    trace_id = int(job.trace_id, 16)
    c.stop_all()  # each worker sends what it still holds as it stops

    def ran(spans: list[ReceivedSpan]) -> bool:
        ids = {s.attributes.get("messaging.message.id") for s in spans}
        return killed <= ids and any(s.name == "task control.finalize" for s in spans)

    spans = receiver.wait_for(ran, what="the killed tasks' and the finalize's spans")
    submitter = one(traced.get_finished_spans(), "submitter")
    ours = [s for s in spans if s.trace_id == job.trace_id]
    tasks = [s for s in ours if s.name.startswith("task ")]
    assert {"task indexrag.stage1", "task embed", "task indexrag.stage2",
            "task control.finalize"} <= {s.name for s in tasks}
    # Nothing the workers ran for this job fell outside its trace.
    job_tasks = [s for s in spans if s.name.startswith("task ")
                 and s.attributes.get("hopindex.job_id") == job.job_id]
    assert {s.trace_id for s in job_tasks} == {job.trace_id}
    step_of = {f"{step_span_id(trace_id, job.job_id, step):016x}": step
               for step in ("indexrag.stage1", "embed:indexrag.stage1", "indexrag.stage2",
                            "embed:indexrag.stage2")}
    for task in tasks:
        if task.name in ("task indexrag.stage1", "task indexrag.stage2"):
            assert step_of.get(task.parent_span_id) == task.name.removeprefix("task "), task
    rerun = [s for s in tasks if s.attributes.get("messaging.message.id") in killed]
    assert {s.attributes["messaging.message.id"] for s in rerun} == killed
    assert all(step_of.get(s.parent_span_id, "").startswith("indexrag.") for s in rerun)
    # The job span is written by the process that ran the finalize (a worker here), as
    # the child of the span that submitted it in this process.
    [job_span] = [s for s in ours if s.name == "ingest job"]
    assert job_span.parent_span_id == f"{submitter.context.span_id:016x}"
    assert job_span.attributes["hopindex.job.state"] == "succeeded"
    steps = {s.name for s in ours if s.name.startswith("step ")}
    assert {"step indexrag.stage1", "step embed:indexrag.stage1",
            "step indexrag.stage2"} <= steps
    calls = [s for s in ours if s.name.startswith("chat ")]
    task_ids = {s.span_id for s in tasks}
    # A request the killed worker finished was exported, its task's span never was:
    # those requests' parents are the killed runs (at most one per task it held).
    orphans = {s.parent_span_id for s in calls if s.parent_span_id not in task_ids}
    assert calls and len(orphans) <= len(killed)
    assert not orphans & {s.span_id for s in spans}
    assert {"gen_ai.request.model", "gen_ai.usage.input_tokens", "hopindex.stage",
            "hopindex.llm.attempt"} <= set(calls[0].attributes)


def test_an_http_query_whose_judge_runs_on_a_worker_is_one_trace(
        tmp_path: Path, private_redis: str, receiver: OtlpReceiver,
        traced: InMemorySpanExporter) -> None:  # noqa: F811  # the fixture
    """An application's span → the SDK's HTTP request → the server's request span → the
    query → the judge task on a real judge worker → its LLM request: one trace, whose id
    the response carries, across the three processes' exporters."""
    redis.Redis.from_url(private_redis).flushdb()
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    embedded = bridgerag_settings(tmp_path / "data", server)
    records = hotpot_questions(2)
    try:
        with local_client(embedded) as ingesting:
            ingesting.ingest_read(INDEX, ReadResult(documents=hotpot_documents(records)),
                                  method="extractive")
        client = local_client(replace(embedded, broker_url=private_redis))
        owner = WorkerProcess(client.settings, ["embed"], concurrency=2, name="engines",
                              log_path=tmp_path / "engines.log").wait_ready()
        judge = WorkerProcess(client.settings, ["judge"], concurrency=1, name="judge",
                              log_path=tmp_path / "judge.log").wait_ready()
        try:
            with BackgroundServer(client.service, KeyRing(parse_env_keys(f"{KEY}:read"))) as api:
                remote = Client.connect(api.url, api_key=KEY)
                with span("application") as app:
                    result = remote.query(INDEX, records[0]["question"], method="bridgerag")
            trace_hex = f"{app.get_span_context().trace_id:032x}"  # type: ignore[attr-defined]
            spans = receiver.wait_for(lambda got: any(
                s.attributes.get("celery.task_name") == QUERY_TASK and s.trace_id == trace_hex
                for s in got), what="the judge task's span")
        finally:
            judge.stop()
            owner.stop()
            client.close()
    finally:
        server.stop()
    assert result.trace["judge"]["site"] == "worker"
    assert result.trace_id == trace_hex
    local = [s for s in traced.get_finished_spans()
             if f"{s.context.trace_id:032x}" == trace_hex]
    request = next(s for s in local if s.name.startswith("POST "))
    assert request.parent is not None
    assert request.parent.span_id == app.get_span_context().span_id  # type: ignore[attr-defined]
    query = one(local, "query")
    assert query.parent is not None and query.parent.span_id == request.context.span_id
    [task] = [s for s in spans if s.attributes.get("celery.task_name") == QUERY_TASK
              and s.trace_id == trace_hex]
    # The engine owner's searches for the query are in it too.
    assert any(s.attributes.get("celery.task_name") == ENGINE_TASK and s.trace_id == trace_hex
               for s in spans)
    assert "judge" in task.attributes["hopindex.query.work"]
    local_ids = {f"{s.context.span_id:016x}" for s in local}
    assert task.parent_span_id in local_ids  # its parent is a span of the API's process
    calls = [s for s in spans if s.trace_id == trace_hex and s.name.startswith("chat ")]
    assert calls and all(s.parent_span_id == task.span_id for s in calls)
    assert calls[0].attributes["gen_ai.operation.name"] == "chat"
    assert "judge" in calls[0].attributes["hopindex.stage"]
