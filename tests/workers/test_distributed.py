"""Real workers on a real Redis: the distributed run builds what the eager run builds,
and survives workers killed mid-stage without losing or duplicating anything."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hopindex.core.models import JobState, Stage
from hopindex.testing.llm_server import LlmTestServer
from tests.workers.conftest import (
    INDEX,
    JOB_TIMEOUT_S,
    Cluster,
    assert_built_as_eager,
    eager_units,
    embedder_settings,
    hotpot_corpus,
    kill_mid_task,
    local_client,
    unit_texts,
    wait_until,
)

pytestmark = pytest.mark.integration

# The LLM workers' queues and tasks at a time: a kill lands once each slot holds a
# taken message (kill_mid_task), so while batches run (about 0.5 s of LLM calls each).
LLM_QUEUES, LLM_SLOTS = ("stage1", "stage2"), 2


def test_two_workers_build_the_same_units_as_the_eager_run(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """An LLM-mode ingest of HotpotQA-100 run by two worker processes (one also owning
    the embedded engines) yields exactly the eager run's unit ids and texts, and every
    unit is in the vector and keyword engines once."""
    server = start_server()
    corpus = hotpot_corpus(tmp_path)
    expected = eager_units(tmp_path, server, corpus)

    c = cluster(server, **embedder_settings(server))
    c.start("w1", "stage1,stage2,control,embed")
    c.start("w2", "stage1,stage2,control")
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [corpus], wait=False)
        assert job.state is JobState.RUNNING  # returned at once: workers run it
        job = client.jobs.wait_for_job(job.job_id, timeout_s=JOB_TIMEOUT_S)
        got = unit_texts(client)
    assert_built_as_eager(c, job, got, expected)
    logs = c.workers[0].log_text() + c.workers[1].log_text()
    assert "stage=indexrag.stage1" in c.workers[1].log_text()  # the second worker took part
    assert "Traceback" not in logs


def test_workers_killed_in_stage1_and_stage2_lose_and_duplicate_nothing(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """SIGKILL the LLM worker mid stage 1 and its replacement mid stage 2: once the
    broker redelivers their unacknowledged tasks to a new worker, the job succeeds
    with the eager run's exact unit set, each unit embedded once."""
    server = start_server(latency_s=0.02)
    corpus = hotpot_corpus(tmp_path, limit=320)
    expected = eager_units(tmp_path, server, corpus)

    # A beat runs the reaper: should a kill land in the instant a message is popped
    # and lose it, the job is re-driven instead of hanging (see test_redrive.py).
    c = cluster(server, stage1_batch_docs=8, stage2_batch_entities=16, job_stall_timeout_s=40,
                reaper_interval_s=2, **embedder_settings(server))
    c.start("engines", "control,embed", concurrency=2)
    c.start_beat()
    victim = c.start("llm-1", ",".join(LLM_QUEUES), concurrency=LLM_SLOTS, pool="threads")
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [corpus], wait=False)
        job = wait_until(client, job.job_id, lambda j: 0 < j.count("indexrag.stage1").done
                          < j.count("indexrag.stage1").total // 2)
        assert job.state is JobState.RUNNING, "stage 1 ended before the kill"
        kill_mid_task(victim, c.settings.broker_url, LLM_QUEUES, LLM_SLOTS)
        victim = c.start("llm-2", ",".join(LLM_QUEUES), concurrency=LLM_SLOTS, pool="threads")
        job = wait_until(client, job.job_id, lambda j: 0 < j.count("indexrag.stage2").done
                          < j.count("indexrag.stage2").total // 2)
        assert job.state is JobState.RUNNING, "stage 2 ended before the kill"
        kill_mid_task(victim, c.settings.broker_url, LLM_QUEUES, LLM_SLOTS)
        c.start("llm-3", ",".join(LLM_QUEUES), concurrency=LLM_SLOTS, pool="threads")
        job = client.jobs.wait_for_job(job.job_id, timeout_s=JOB_TIMEOUT_S)
        got = unit_texts(client)
    assert_built_as_eager(c, job, got, expected)
    # Redelivered tasks were counted once: no stage reports more than its total.
    for stage in ("indexrag.stage1", Stage.EMBED, "indexrag.stage2"):
        counts = job.count(stage)
        assert counts.done + counts.failed + counts.skipped == counts.total, stage
