"""Infrastructure faults around LLM calls, on real workers: a Redis restart (broker, state,
LLM cache and limiter all on it) and a full disk under the SQLite LLM cache cost retries,
never a document. Each run ends with the eager run's exact unit set and no item errors."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from celery import Celery
from celery.exceptions import Reject

from hopindex.api.client.local import LocalClient
from hopindex.core.errors import BackendUnavailableError
from hopindex.core.models import Job
from hopindex.testing.llm_server import LlmTestServer
from hopindex.testing.redis_server import RedisServer, free_port
from hopindex.workers.base import HopindexTask
from tests import waiting
from tests.workers.conftest import (
    INDEX,
    JOB_TIMEOUT_S,
    Cluster,
    assert_built_as_eager,
    chat_requests,
    chats_in_flight,
    eager_units,
    embedder_settings,
    hotpot_corpus,
    local_client,
    unit_texts,
    wait_until,
)

pytestmark = pytest.mark.integration

# Long enough that a call is still in flight when Redis goes down right after it arrives.
CALL_LATENCY_S = 0.3
# A Redis restart as an orchestrator does it: a few seconds without an answer.
REDIS_DOWN_S = 5.0
# Room for the cache file's schema, its WAL index and a few dozen replies; the 100
# documents' replies need several times that.
CACHE_DISK_SIZE = "160k"
# What the LLM layer logs when the cache or the limiter fails around a call.
INFRA_EVENTS = ("llm_cache_write_failed", "llm_cache_read_failed", "rate limiter Redis")


@pytest.fixture(scope="module")
def private_redis(aof_redis: RedisServer) -> str:
    """The ``cluster`` fixture's Redis: this module's restartable one."""
    return aof_redis.url


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of ``CACHE_DISK_SIZE`` bytes: SQLite's real 'database or disk is full'."""
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={CACHE_DISK_SIZE}", "tmpfs",
                           str(mount_point)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "--lazy", str(mount_point)], check=False)


def _wait_for_stage1_calls(client: LocalClient, job_id: str, server: LlmTestServer) -> None:
    """Return once stage 1 is under way and a stage-1 call that arrived since is in
    flight at the server: it stays there for up to ``CALL_LATENCY_S``."""
    job = wait_until(client, job_id, lambda j: 0 < j.count("indexrag.stage1").done
                     < j.count("indexrag.stage1").total)
    assert not job.state.is_final, "the job ended before the fault"
    seen = chat_requests(server)
    waiting.wait_until(lambda: chat_requests(server) > seen and chats_in_flight(server),
                       what="a stage-1 call in flight", interval_s=0.005)


def _llm_log(cluster: Cluster) -> str:
    return "".join(w.log_text() for w in cluster.workers if w.name.startswith("llm"))


def test_a_redis_restart_mid_ingest_retries_tasks_and_fails_no_document(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster], aof_redis: RedisServer) -> None:
    """Redis (broker, state, LLM cache and rate limiter) restarts for a few seconds while
    stage-1 calls are in flight: the cache and limiter errors around those calls retry
    their tasks (the retry itself waits for the broker to come back) instead of failing
    documents, and the job ends with the eager run's unit set, no item errors."""
    server = start_server(latency_s=CALL_LATENCY_S)
    corpus = hotpot_corpus(tmp_path, limit=48)
    expected = eager_units(tmp_path, server, corpus)

    c = cluster(server, stage1_batch_docs=8, stage2_batch_entities=16,
                **embedder_settings(server))
    c.start("engines", "control,embed", concurrency=2)
    c.start("llm", "stage1,stage2", concurrency=2, pool="threads")
    with local_client(c.settings) as client:
        job: Job = client.ingest(INDEX, [corpus], wait=False)
        _wait_for_stage1_calls(client, job.job_id, server)
        aof_redis.restart(down_s=REDIS_DOWN_S)
        job = client.jobs.wait_for_job(job.job_id, timeout_s=JOB_TIMEOUT_S)
        got = unit_texts(client)
    assert_built_as_eager(c, job, got, expected)
    log = _llm_log(c)
    assert any(event in log for event in INFRA_EVENTS), "the restart missed the LLM calls"
    assert "task_retrying" in log
    # Every retry was published once the broker was back, none dropped for good.
    assert "requeue=False" not in log


def test_a_retry_that_cannot_be_published_puts_the_task_back() -> None:
    """The broker unreachable past the publish retry policy: the retry of a task failing
    with a retryable error cannot be sent, and instead of Celery's reject without requeue
    (the message dropped) the task's message is requeued for redelivery."""
    app = Celery("unpublishable", task_cls=HopindexTask,
                 broker=f"redis://127.0.0.1:{free_port()}/0")
    app.conf.update(hopindex_max_retries=3, task_publish_retry_policy={
        "max_retries": 1, "interval_start": 0, "interval_step": 0.1, "interval_max": 0.1})

    @app.task(name="hopindex.test.state_store_away")  # type: ignore[untyped-decorator]  # celery is untyped
    def state_store_away(job_id: str) -> None:
        raise BackendUnavailableError(f"state store away during job {job_id}")

    # The request a worker delivers: not eager, not called directly, first run.
    state_store_away.push_request(id="task-1", args=["job-1"], kwargs={}, retries=0,
                                  is_eager=False, called_directly=False, delivery_info={})
    try:
        with pytest.raises(Reject) as rejected:
            state_store_away("job-1")
    finally:
        state_store_away.pop_request()
        app.close()
    assert rejected.value.requeue


def test_a_full_disk_under_the_sqlite_llm_cache_keeps_every_paid_reply(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster], small_disk: Path) -> None:
    """The workers' SQLite LLM cache lives on a disk that fills up during the ingest: each
    write that fails ('database or disk is full') is logged and the reply it would have
    stored is used anyway, so the job ends with the eager run's unit set, no item errors."""
    server = start_server()
    corpus = hotpot_corpus(tmp_path)
    expected = eager_units(tmp_path, server, corpus)

    c = cluster(server, llm_cache_url=f"sqlite://{small_disk / 'llm-cache.sqlite3'}",
                **embedder_settings(server))
    c.start("engines", "control,embed", concurrency=2)
    c.start("llm", "stage1,stage2", concurrency=2)
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [corpus], wait=False)
        job = client.jobs.wait_for_job(job.job_id, timeout_s=JOB_TIMEOUT_S)
        got = unit_texts(client)
    assert_built_as_eager(c, job, got, expected)
    log = _llm_log(c)
    assert "llm_cache_write_failed" in log and "database or disk is full" in log
    assert "Traceback" not in log
