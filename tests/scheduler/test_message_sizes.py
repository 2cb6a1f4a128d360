"""What a job sends and records per task does not grow with its document count: a task
message carries the job's id and its own batch, never the job's scope, which is kept
once per job in pages. Checked by sizes at two corpus sizes (no timing), with the
messages really sent to a broker no worker reads."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from hopindex.api.client.local import LocalClient
from hopindex.backends.protocols import IndexInfo
from hopindex.backends.state.scope_pages import SCOPE_PAGE_CHARS
from hopindex.core.models import JobKind, JobState
from hopindex.methods.plugin import Scope
from hopindex.scheduler.pipeline import after_phase, job_scope, start_steps
from hopindex.scheduler.submit import new_job
from hopindex.workers.queues import Queue
from tests.conftest import ClientFactory
from tests.redis_server import private_redis_server
from tests.workers.conftest import hotpot_corpus

pytestmark = pytest.mark.integration

INDEX = "sized"
BATCH_DOCS = 8


@pytest.fixture(scope="module")
def broker_url() -> Iterator[str]:
    """A Redis whose queues only this module's messages reach."""
    with private_redis_server() as url:
        yield url


def _doc_ids(count: int) -> list[str]:
    # Ids of one length, so that a batch of them is the same size at every count.
    return [f"doc-{n:07d}" for n in range(count)]


def _first_step(client: LocalClient, job_id: str, count: int) -> None:
    """Start a job over ``count`` documents of the LLM-free method: its stage-1
    fan-out is recorded and sent."""
    state = client.service.backends.state
    if state.get_index(INDEX) is None:
        state.create_index(IndexInfo(name=INDEX, method="extractive", created_at=0.0))
    job = new_job(job_id, INDEX, JobKind.INGEST, {})
    job.state = JobState.RUNNING
    state.create_job(job)
    ids = _doc_ids(count)
    start_steps(client.service.runtime, job_id, INDEX,
                Scope(doc_ids=ids, hashes=dict.fromkeys(ids, "0" * 64)))


def _queued_bytes(url: str) -> list[int]:
    """The size of every message waiting on the stage-1 queue."""
    client = redis.Redis.from_url(url)
    try:
        return [len(m) for m in client.lrange(Queue.STAGE1.value, 0, -1)]
    finally:
        client.close()


def _sizes(client: LocalClient, url: str, job_id: str, count: int) -> tuple[int, int, int]:
    """The largest recorded task, the recorded callback and the largest message sent,
    in bytes, of a job over ``count`` documents."""
    redis.Redis.from_url(url).flushdb()
    _first_step(client, job_id, count)
    dispatch = client.service.backends.state.last_dispatch(job_id)
    assert dispatch is not None and len(dispatch.tasks) == -(-count // BATCH_DOCS)
    return (max(len(json.dumps(task)) for task in dispatch.tasks),
            len(json.dumps(dispatch.callback)), max(_queued_bytes(url)))


def test_task_messages_and_records_stay_the_same_size_as_the_corpus_grows(
        broker_url: str, make_client: ClientFactory) -> None:
    """Stage 1 of a 5,000-document job records and sends tasks no larger than those of a
    50-document job (within a few bytes: counters and ids of one length), while the
    job's scope, kept once, holds all 5,000 documents across several pages."""
    client = make_client(broker_url=broker_url, stage1_batch_docs=BATCH_DOCS)
    small = _sizes(client, broker_url, "job-small", 50)
    large = _sizes(client, broker_url, "job-large", 5_000)
    for few, many in zip(small, large, strict=True):
        assert many <= few * 1.05, (small, large)
    kept = client.service.backends.state.get_job_scope("job-large")
    assert kept is not None and len(kept["doc_ids"]) == 5_000
    assert len(json.dumps(kept)) > SCOPE_PAGE_CHARS


def test_a_phases_touched_keys_join_the_kept_scope_once(
        broker_url: str, make_client: ClientFactory) -> None:
    """The keys a phase's tasks touched are added to the kept scope, which the next
    step reads; the same callback run again (a redelivery) leaves the scope as it was."""
    redis.Redis.from_url(broker_url).flushdb()
    client = make_client(broker_url=broker_url, stage1_batch_docs=BATCH_DOCS)
    runtime = client.service.runtime
    _first_step(client, "job-touch", 3)
    results = [{"units": [], "touched": {"extractive.titles": ["b", "a"]}},
               {"units": [], "touched": {"extractive.titles": ["c"]}}]
    for _ in range(2):
        after_phase(runtime, results, "job-touch", INDEX, position=0, level=0)
        scope = job_scope(runtime, "job-touch")
        assert scope.touched == {"extractive.titles": ["a", "b", "c"]}
        assert scope.doc_ids == _doc_ids(3)


def test_a_job_record_does_not_grow_with_its_tasks(
        tmp_path: Path, make_client: ClientFactory) -> None:
    """An ingest of 48 documents in batches of 2 (24 tasks a phase) leaves a job record
    the size of an 8-document ingest's but for its counters' digits: what each task
    run settled is kept beside the record, which holds one claim per step."""
    sizes, keys = [], []
    for count in (8, 48):
        client = make_client(f"docs-{count}", stage1_batch_docs=2)
        job = client.ingest(f"sized-{count}", [hotpot_corpus(tmp_path, limit=count)])
        assert job.state is JobState.SUCCEEDED
        sizes.append(len(json.dumps(job.as_dict())))
        keys.append(len(job.settled))
    assert sizes[1] - sizes[0] <= 40, sizes
    assert keys[0] == keys[1]  # one claim per step, whatever the step's tasks
