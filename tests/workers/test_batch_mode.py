"""Batch mode on real workers: a job's LLM work goes to the provider's Batch API, the job
waits on the provider without holding a worker, the beat's poller follows its batches
and sends its tasks again, and the build equals the synchronous one, whatever fails on
the way."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hopindex.core.models import Job, JobState
from hopindex.testing.llm_server import LlmTestServer
from tests import waiting
from tests.workers.conftest import (
    INDEX,
    JOB_TIMEOUT_S,
    Cluster,
    assert_batches_cancelled,
    eager_reference,
    embedder_settings,
    hotpot_corpus,
    kinds_and_texts,
    local_client,
)

pytestmark = pytest.mark.integration

DOCS = 12
# Batches are polled often and are worth sending for any phase of these small builds.
BATCH_SETTINGS: dict[str, object] = {"llm_mode": "batch", "llm_batch_min_items": 1,
                                     "llm_batch_poll_interval_s": 0.2,
                                     "stage1_batch_docs": 6}


def _cluster(cluster: Callable[..., Cluster], server: LlmTestServer) -> Cluster:
    c = cluster(server, **BATCH_SETTINGS, **embedder_settings(server))
    c.start("engines", "control,embed")
    c.start("llm", "stage1,stage2")
    c.start_beat()
    return c


def _built(c: Cluster, job: Job) -> tuple[Job, dict[str, tuple[str, str]]]:
    with local_client(c.settings) as client:
        done = client.jobs.wait_for_job(job.job_id, timeout_s=JOB_TIMEOUT_S)
        return done, kinds_and_texts(client)


def _no_chat_calls(server: LlmTestServer) -> None:
    assert server.stats.count("chat.completions") == 0, server.stats.requests


def test_a_batch_build_with_failed_lines_equals_the_synchronous_build(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """Every LLM call of an IndexRAG build went through provider batches (no chat call
    at all); the job waited on the provider between phases; a quarter of the lines failed
    (a 500 line) on their first batch and each was sent again once, in the next one; and
    the units are the synchronous build's."""
    server = start_server(batch_fail_lines=0.25)
    corpus = hotpot_corpus(tmp_path, limit=DOCS)
    expected = eager_reference(tmp_path, server, corpus)
    server.reset()
    c = _cluster(cluster, server)
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [corpus], wait=False)
        waiting.wait_until(
            lambda: client.jobs.get_job(job.job_id).state is JobState.WAITING_ON_PROVIDER,
            what="the job waiting on the provider", timeout_s=JOB_TIMEOUT_S)
    done, got = _built(c, job)
    assert done.state is JobState.SUCCEEDED, (done.reason, done.errors)
    assert got == expected
    _no_chat_calls(server)
    submissions = server.stats.submissions
    assert sorted(set(submissions.values())) == [1, 2], "failed lines sent again once"
    assert any(b.failed for b in done.provider_batches)
    assert all(b.settled for b in done.provider_batches)
    assert {b.phase for b in done.provider_batches} == {"indexrag.stage1", "indexrag.stage2"}
    assert done.llm["indexrag.stage1"].calls == sum(
        b.completed for b in done.provider_batches if b.phase == "indexrag.stage1")


def test_the_stage_worker_and_the_poller_killed_while_a_batch_is_out(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """While the first batch is with the provider (which takes its time), the stage
    worker, the worker that runs the poller (the control queue's) and the beat are all
    SIGKILLed, and new ones take their place: the batches are followed from the job
    record, no line is sent twice, and the build equals the clean one."""
    server = start_server(batch_completion_s=2.0)
    corpus = hotpot_corpus(tmp_path, limit=DOCS)
    expected = eager_reference(tmp_path, server, corpus)
    server.reset()
    c = _cluster(cluster, server)
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [corpus], wait=False)
        waiting.wait_until(lambda: server.stats.batches.get("batches_created", 0) >= 1,
                           what="a batch with the provider", timeout_s=JOB_TIMEOUT_S)
    for process in (*c.workers, *c.others):
        process.kill()
    c.start("engines-2", "control,embed")
    c.start("llm-2", "stage1,stage2")
    c.start_beat()
    done, got = _built(c, job)
    assert done.state is JobState.SUCCEEDED, (done.reason, done.errors)
    assert got == expected
    assert set(server.stats.submissions.values()) == {1}, "a line was sent twice"


def test_cancelling_a_waiting_job_cancels_its_batch(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """A job cancelled while its batch is with the provider ends cancelled, never
    running, and the provider's batch is cancelled."""
    server = start_server(batch_completion_s=60.0)
    corpus = hotpot_corpus(tmp_path, limit=DOCS)
    c = _cluster(cluster, server)
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [corpus], wait=False)
        waiting.wait_until(
            lambda: (j := client.jobs.get_job(job.job_id)) is not None
            and any(b.batch_id for b in j.provider_batches),
            what="a batch recorded with its id", timeout_s=JOB_TIMEOUT_S)
        client.jobs.cancel_job(job.job_id)
        done = client.jobs.wait_for_job(job.job_id, timeout_s=JOB_TIMEOUT_S)
    assert_batches_cancelled(done, server)
