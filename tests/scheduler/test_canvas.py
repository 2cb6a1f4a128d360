"""A step's fan-out is sent once per job: the message that plans a step may come twice
(the broker hands it out again when its first run outlasts the visibility timeout), and
a second send under new task ids would run every batch twice and count its items
twice."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from hopindex.api.client.local import LocalClient
from hopindex.core.models import Job, JobKind
from hopindex.scheduler.canvas import fan_out
from hopindex.scheduler.progress import settle
from hopindex.scheduler.submit import new_job
from hopindex.scheduler.task_names import FINALIZE, PURGE
from hopindex.workers.queues import Queue
from tests.methods.indexrag.conftest import ClientFactory
from tests.redis_server import private_redis_server

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
            runtime.signature(FINALIZE, job_id, INDEX, {}, immutable=True))


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
