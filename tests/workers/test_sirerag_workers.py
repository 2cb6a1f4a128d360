"""SiReRAG on real worker processes and a real Redis: a stage2 worker killed in the middle
of a summary level loses and duplicates nothing; the job ends with the trees an
undisturbed in-process build makes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hopindex.core.models import JobState, Stage
from hopindex.testing.llm_server import LlmTestServer
from tests.methods.indexrag.conftest import llm_settings, local_client
from tests.workers.conftest import (
    INDEX,
    JOB_TIMEOUT_S,
    Cluster,
    embedder_settings,
    engine_counts,
    hotpot_corpus,
    kill_mid_task,
    kinds_and_texts,
    wait_until,
)

pytestmark = pytest.mark.integration

DOCS = 24
PHASE = "sirerag.similarity"
# Each summary call takes this long, so the kill, once each of the victim's slots holds
# a taken batch (kill_mid_task), lands while summary batches run.
LATENCY_S = 0.5
STAGE2_SLOTS = 2


def _eager_reference(tmp_path: Path, server: LlmTestServer, corpus: Path
                     ) -> dict[str, tuple[str, str]]:
    with local_client(llm_settings(tmp_path / "clean", server, **embedder_settings(server))
                      ) as s:
        job = s.ingest(INDEX, [corpus], method="sirerag")
        assert job.state is JobState.SUCCEEDED and not job.errors, job.reason
        return kinds_and_texts(s)


def test_a_stage2_worker_killed_during_a_summary_level_loses_and_duplicates_nothing(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """SIGKILL the stage2 worker while it writes a level's summaries: the broker
    redelivers its batch to a replacement, and the job succeeds with the eager run's
    exact units (trees included), each embedded once, every item counted once."""
    server = start_server(latency_s=LATENCY_S)
    corpus = hotpot_corpus(tmp_path, limit=DOCS)
    expected = _eager_reference(tmp_path, server, corpus)
    # The control worker's first plan of a tree compiles UMAP (numba): 14 s of CPU on
    # an idle machine, 40 s measured at a load average of 10 on 2 cores. The time
    # limit must outlast it (or the plan is killed) and the visibility timeout the time
    # limit (or Redis hands the message out twice). The kill's batches come back only
    # after the visibility timeout, which every second here lengthens the test by.
    c = cluster(server, stage2_batch_entities=2, visibility_timeout_s=50,
                task_time_limit_s=45, job_stall_timeout_s=120, reaper_interval_s=2,
                **embedder_settings(server))
    c.start("engines", "control,embed", concurrency=2)
    c.start_beat()
    c.start("stage1", "stage1")
    victim = c.start("stage2-1", "stage2", concurrency=STAGE2_SLOTS, pool="threads")
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [corpus], method="sirerag", wait=False)
        job = wait_until(client, job.job_id, lambda j: 0 < j.count(PHASE).done
                          < j.count(PHASE).total)
        assert job.state is JobState.RUNNING, "the summary level ended before the kill"
        kill_mid_task(victim, c.settings.broker_url, ["stage2"], STAGE2_SLOTS)
        c.start("stage2-2", "stage2", concurrency=STAGE2_SLOTS, pool="threads")
        job = client.jobs.wait_for_job(job.job_id, timeout_s=JOB_TIMEOUT_S)
        got = kinds_and_texts(client)
        stored = sum(client.service.backends.state.count_units(INDEX).values())
    c.stop_all()
    assert job.state is JobState.SUCCEEDED, job.reason
    assert not job.errors
    assert got == expected
    assert stored == len(expected)
    assert engine_counts(c) == (len(expected), len(expected))
    for phase in ("sirerag.propositions", "sirerag.aggregates", PHASE,
                  "sirerag.relatedness", Stage.EMBED):
        counts = job.counts[phase]
        assert counts.done + counts.failed + counts.skipped == counts.total, phase
