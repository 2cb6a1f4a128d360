"""Messages the broker loses are re-sent by the reaper: a stalled job is re-driven
from its recorded fan-out and still builds exactly what the eager run builds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from hopindex.api.client.local import LocalClient
from hopindex.core.models import Job, Stage
from hopindex.testing.llm_server import LlmTestServer
from tests import waiting
from tests.workers.conftest import (
    INDEX,
    JOB_TIMEOUT_S,
    Cluster,
    assert_built_as_eager,
    eager_units,
    embedder_settings,
    hotpot_corpus,
    local_client,
    unit_texts,
)

pytestmark = pytest.mark.integration

# Above the visibility timeout, as the settings require (nothing here waits for a
# redelivery, so both are shorter than the other worker tests'); the reaper looks
# every second, so a lost message costs about STALL_S.
VISIBILITY_S, STALL_S = 10, 12
DOCS, BATCH = 24, 6


def _cluster(cluster: Callable[..., Cluster], server: LlmTestServer) -> Cluster:
    return cluster(server, stage1_batch_docs=BATCH, visibility_timeout_s=VISIBILITY_S,
                   task_time_limit_s=8, job_stall_timeout_s=STALL_S, reaper_interval_s=1,
                   **embedder_settings(server))


def _queue(c: Cluster) -> redis.Redis:
    """The broker's Redis: kombu keeps each queue's waiting messages in a list."""
    return redis.Redis.from_url(c.settings.broker_url)


def _finish(c: Cluster, client: LocalClient, job: Job, expected: dict[str, str]) -> Job:
    job = client.jobs.wait_for_job(job.job_id, timeout_s=JOB_TIMEOUT_S)
    got = unit_texts(client)
    assert_built_as_eager(c, job, got, expected)
    for stage in ("indexrag.stage1", Stage.EMBED, "indexrag.stage2"):
        counts = job.count(stage)
        assert counts.done + counts.failed + counts.skipped == counts.total, stage
    return job


def test_a_lost_stage1_task_is_sent_again(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """One of four stage-1 messages vanishes from the broker before any worker runs:
    its chord can never fire on its own. After the stall timeout the reaper re-sends
    exactly that task (same id, same chord), and the job ends with the eager units."""
    server = start_server()
    corpus = hotpot_corpus(tmp_path, limit=DOCS)
    expected = eager_units(tmp_path, server, corpus)
    c = _cluster(cluster, server)
    broker = _queue(c)
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [corpus], wait=False)
        assert broker.llen("stage1") == DOCS // BATCH
        assert broker.rpop("stage1") is not None  # the broker loses one message
        c.start("engines", "control,embed")
        c.start("llm", "stage1,stage2")
        c.start_beat()
        job = _finish(c, client, job, expected)
    assert len(job.redrives) == 1, job.redrives
    assert job.redrives[0].startswith(f"re-sent 1 of {DOCS // BATCH} tasks of indexrag.stage1")


def test_a_lost_chord_callback_is_sent_again_with_the_results(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """Every stage-1 task finishes, but the chord's callback message is lost on its
    way to the control queue: the reaper finds all tasks settled and re-sends the
    callback with their stored results, and the job goes on to the eager units."""
    server = start_server()
    corpus = hotpot_corpus(tmp_path, limit=DOCS)
    expected = eager_units(tmp_path, server, corpus)
    c = _cluster(cluster, server)
    broker = _queue(c)
    c.start("llm", "stage1,stage2")  # nobody takes the control queue yet
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [corpus], wait=False)
        waiting.wait_until(lambda: broker.llen("control") == 1,
                           what="the stage-1 chord's callback", timeout_s=120)
        stage1 = client.jobs.get_job(job.job_id).count("indexrag.stage1")
        assert stage1.done == stage1.total == DOCS
        assert broker.rpop("control") is not None  # the broker loses it
        c.start("engines", "control,embed")
        c.start_beat()
        job = _finish(c, client, job, expected)
    assert len(job.redrives) == 1, job.redrives
    assert job.redrives[0].startswith("re-sent the callback of indexrag.stage1")
