"""Work that fails for good is remembered on the index and comes back: an LLM outage in
stage 2 with real workers leaves the job ``succeeded_with_errors`` and the index
``partial``; ``repair`` (or the next ingest of the same input) redoes exactly the
failed items, and the index ends with the clean build's units: 0 lost, 0 duplicated.
A cancelled job stops for real: ``cancelling`` until its running tasks return, then
``cancelled`` with counts that no longer move, and the index says it is partial."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hopindex.core.models import JobKind, JobState
from hopindex.scheduler.outstanding import IndexStatus
from hopindex.testing.llm_server import LlmTestServer
from hopindex.workers.queues import Queue
from tests import waiting
from tests.workers.conftest import (
    FAST_GIVE_UP,
    INDEX,
    Cluster,
    eager_reference,
    embedder_settings,
    engine_counts,
    hotpot_corpus,
    kinds_and_texts,
    local_client,
    queues_idle,
    wait_until,
)

pytestmark = pytest.mark.integration

def test_stage2_outage_is_remembered_and_repaired_with_workers(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """Every stage-2 call inside a 3 s outage fails past its retries; the job says which
    bridge entities are missing, the index lists them, and a repair rebuilds the clean
    unit set and engines, calling the LLM only for the failed entities."""
    server = start_server(outage_on_kind="stage2", outage_s=3.0)
    corpus = hotpot_corpus(tmp_path, limit=40)
    expected = eager_reference(tmp_path, start_server(), corpus)
    c = cluster(server, **embedder_settings(server), **FAST_GIVE_UP)
    c.start("w1", "stage1,stage2,control,embed")
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [corpus], wait=False)
        job = client.jobs.wait_for_job(job.job_id, timeout_s=600)
        assert server.api.outage.started
        assert job.state is JobState.SUCCEEDED_WITH_ERRORS, job.reason
        failed = job.missing()["indexrag.stage2"]
        assert failed > 0 and set(job.missing()) == {"indexrag.stage2"}
        assert all("LLM bridging facts failed" in e.reason for e in job.errors)
        assert kinds_and_texts(client) != expected  # bridges are missing now
        outstanding = client.service.outstanding(INDEX)
        assert outstanding.status is IndexStatus.PARTIAL
        assert outstanding.failed_per_phase() == {"indexrag.stage2": failed}
        assert not outstanding.documents

        server.api.outage.wait_over()
        calls_before = server.stats.count("chat.completions", "ok")
        repair = client.indexes.repair_index(INDEX, wait=False)
        repair = client.jobs.wait_for_job(repair.job_id, timeout_s=600)
        assert repair.kind is JobKind.REPAIR and repair.state is JobState.SUCCEEDED, repair
        assert repair.count("indexrag.stage1").total == 0
        assert repair.count("indexrag.stage2").total == failed
        # Each failed entity costs one call again; nothing that succeeded is redone.
        assert server.stats.count("chat.completions", "ok") - calls_before == failed
        assert client.service.outstanding(INDEX).status is IndexStatus.READY
        got = kinds_and_texts(client)
    c.stop_all()
    assert got == expected
    assert engine_counts(c) == (len(expected), len(expected))


def test_cancel_means_it_and_the_index_says_partial(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """A cancel asked mid-stage-1 reads ``cancelling`` while tasks are in flight, then
    ``cancelled``; its counts then stay put, the index is ``partial`` naming the
    unfinished documents, and the next ingest completes it to the clean unit set."""
    server = start_server(latency_s=0.2)
    corpus = hotpot_corpus(tmp_path, limit=40)
    expected = eager_reference(tmp_path, server, corpus)
    # Ten batches of four, two at a time: most are still queued when the cancel comes.
    c = cluster(server, **embedder_settings(server), llm_concurrency=2, stage1_batch_docs=4)
    c.start("w1", "stage1,stage2,control,embed", concurrency=2)
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [corpus], wait=False)
        started = wait_until(client, job.job_id,
                             lambda j: j.count("indexrag.stage1").done > 0, timeout_s=120)
        assert started.state is JobState.RUNNING, "the job ended before the cancel"
        asked = client.jobs.cancel_job(job.job_id)
        assert asked.state is JobState.CANCELLING
        cancelled = wait_until(client, job.job_id, lambda j: j.state is JobState.CANCELLED,
                               timeout_s=120)
        assert cancelled.state is JobState.CANCELLED, cancelled.state
        assert cancelled.count("indexrag.stage1").done < 40
        # Every task sent for the job has returned, the batches still queued at the
        # cancel (which start no work) and the phase callback included: none is left to
        # move the counts.
        waiting.wait_until(lambda: queues_idle(c.settings.broker_url, list(Queue)),
                           what="every queued and running task to return", timeout_s=120)
        assert client.jobs.get_job(job.job_id).as_dict() == cancelled.as_dict()
        outstanding = client.service.outstanding(INDEX)
        assert outstanding.status is IndexStatus.PARTIAL
        assert len(outstanding.documents) == 40  # none reached its finalize step
        described = outstanding.as_dict()
        assert described["outstanding"]["documents"] == 40

        again = client.ingest(INDEX, [corpus], wait=False)
        again = client.jobs.wait_for_job(again.job_id, timeout_s=600)
        assert again.state is JobState.SUCCEEDED, again.reason
        assert client.service.outstanding(INDEX).status is IndexStatus.READY
        got = kinds_and_texts(client)
    c.stop_all()
    assert got == expected
    assert engine_counts(c) == (len(expected), len(expected))
