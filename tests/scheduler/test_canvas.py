"""A step's fan-out is sent once per job: the message that plans a step may come twice
(the broker hands it out again when its first run outlasts the visibility timeout), and
a second send under new task ids would run every batch twice and count its items
twice."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hopindex.api.client.local import LocalClient
from hopindex.core.models import Job, JobKind
from hopindex.core.tracing import span
from hopindex.core.tracing.propagation import parse_traceparent, traceparent
from hopindex.core.tracing.span_ids import step_span_id
from hopindex.scheduler.canvas import fan_out
from hopindex.scheduler.progress import settle
from hopindex.scheduler.redrive import plan_redrive
from hopindex.scheduler.submit import new_job
from hopindex.scheduler.task_names import FINALIZE, PURGE
from hopindex.workers.queues import Queue
from tests.methods.indexrag.conftest import ClientFactory
from tests.redis_server import private_redis_server
from tests.tracing import traced  # noqa: F401  # a fixture

pytestmark = pytest.mark.integration

INDEX = "fanned"


@pytest.fixture(scope="module")
def broker_url() -> Iterator[str]:
    """A Redis whose queues only this module's messages reach."""
    with private_redis_server() as url:
        yield url


def _sent(url: str) -> int:
    """Messages waiting on the embed queue (no worker takes them here)."""
    client = redis.Redis.from_url(url)
    try:
        return int(client.llen(Queue.EMBED.value))
    finally:
        client.close()


def _fan_out_purges(client: LocalClient, job_id: str, phase: str) -> None:
    runtime = client.service.runtime
    header = [runtime.signature(PURGE, job_id, INDEX, [f"u{n}"], immutable=True)
              for n in range(3)]
    fan_out(runtime, job_id, phase, header,
            runtime.signature(FINALIZE, job_id, INDEX, immutable=True))


def test_a_repeated_fan_out_of_a_step_sends_nothing(
        broker_url: str, make_client: ClientFactory) -> None:
    """The first fan-out of a phase sends its three tasks and records them; the same
    phase fanned out again by the same job sends nothing and records nothing; another
    phase, or the same phase of another job, is sent as usual."""
    redis.Redis.from_url(broker_url).flushdb()
    client = make_client(broker_url=broker_url)
    state = client.service.backends.state
    for job_id in ("job-a", "job-b"):
        state.create_job(new_job(job_id, INDEX, JobKind.INGEST, {}))
    _fan_out_purges(client, "job-a", "purge")
    assert _sent(broker_url) == 3
    first = state.last_dispatch("job-a")
    _fan_out_purges(client, "job-a", "purge")
    assert _sent(broker_url) == 3
    assert state.last_dispatch("job-a") == first
    _fan_out_purges(client, "job-a", "embed:x")
    _fan_out_purges(client, "job-b", "purge")
    assert _sent(broker_url) == 9


def test_a_fan_out_marked_but_never_recorded_is_sent_by_the_next_run(
        broker_url: str, make_client: ClientFactory) -> None:
    """A first run that died between marking the phase and recording its fan-out sent
    nothing: the run that comes next (the redelivered message, or the reaper's) sends
    it."""
    redis.Redis.from_url(broker_url).flushdb()
    client = make_client(broker_url=broker_url)
    state = client.service.backends.state
    state.create_job(new_job("job-c", INDEX, JobKind.INGEST, {}))

    def mark(job: Job) -> None:
        return None

    settle(state, "job-c", mark, key="fan-out:purge")  # the dead run's mark
    _fan_out_purges(client, "job-c", "purge")
    assert _sent(broker_url) == 3
    dispatch = state.last_dispatch("job-c")
    assert dispatch is not None and dispatch.phase == "purge"


def test_a_traced_fan_out_records_its_step_context_for_whatever_sends_it_again(
        broker_url: str, make_client: ClientFactory,
        traced: InMemorySpanExporter) -> None:  # noqa: F811  # the fixture
    """With tracing on, each task of a recorded fan-out carries its step span's context
    (a child of the job's span, in the job's trace) in its message headers, and the
    callback also what writing the step span needs: a re-drive or a resume sends the
    records as they are, so what it sends joins the same trace under the same step."""
    redis.Redis.from_url(broker_url).flushdb()
    client = make_client(broker_url=broker_url)
    state = client.service.backends.state
    with span("submitter"):
        job = new_job("job-t", INDEX, JobKind.INGEST, {})
    state.create_job(job)
    trace_id, job_span, _ = parse_traceparent(job.trace["traceparent"]) or (0, 0, 0)
    assert trace_id and job.trace_id == f"{trace_id:032x}"
    _fan_out_purges(client, "job-t", "purge")
    dispatch = state.last_dispatch("job-t")
    assert dispatch is not None
    step = traceparent(trace_id, step_span_id(trace_id, "job-t", "purge"), 1)
    plan = plan_redrive(client.service.runtime.app, state, state.get_job("job-t") or job,
                        dispatch)
    assert [t["options"]["headers"]["traceparent"] for t in plan.tasks] == [step] * 3
    callback = dispatch.callback["options"]["headers"]
    assert callback["traceparent"] == step and callback["hopindex_step"] == "purge"
    assert callback["hopindex_job_span"] == f"{job_span:016x}"
    waiting = redis.Redis.from_url(broker_url).lrange(Queue.EMBED.value, 0, -1)
    assert {json.loads(m)["headers"]["traceparent"] for m in waiting} == {step}


def test_an_untraced_fan_out_carries_no_trace_headers(
        broker_url: str, make_client: ClientFactory) -> None:
    redis.Redis.from_url(broker_url).flushdb()
    client = make_client(broker_url=broker_url)
    state = client.service.backends.state
    state.create_job(new_job("job-u", INDEX, JobKind.INGEST, {}))
    _fan_out_purges(client, "job-u", "purge")
    dispatch = state.last_dispatch("job-u")
    assert dispatch is not None
    assert all("traceparent" not in t["options"].get("headers", {}) for t in dispatch.tasks)
