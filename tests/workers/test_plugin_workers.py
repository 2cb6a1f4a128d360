"""A third-party index method on real worker processes and a real Redis: the workers find
it through its entry point, build what the eager run builds, and lose and duplicate
nothing when killed in the middle of its groups and levels phases."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import Job, JobKind, JobState, Stage
from hopindex.scheduler.level_builds import BuildState
from hopindex.testing.llm_server import LlmTestServer
from tests.methods.indexrag.conftest import llm_settings, local_client
from tests.plugin_method.fixtures import sentences_plugin  # noqa: F401  # a fixture
from tests.plugin_method.method import LAZY_METHOD, SLOW_PHASE_VARIABLE
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

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sentences_plugin")]

DOCS = 24
PHASES = ("sentences.sentences", "sentences.words", "sentences.tree")
# Read by the workers' registry, which must know the plugin's variables to start at all.
METHOD_ENV = {"method_env": {"HOPINDEX_SENTENCES_MAX_GROUP_SIZE": "3"}}
# Each batch of the method's phases sleeps this long in the killed tests, so the kill,
# once each of the victim's PHASE_SLOTS holds a taken batch (kill_mid_task), lands
# inside batches in progress.
SLOW_S = 0.5
PHASE_QUEUES, PHASE_SLOTS = "stage1,stage2", 2


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """The first DOCS HotpotQA-100 documents: 144 sentences, 68 words, 12 pairs."""
    return hotpot_corpus(tmp_path, limit=DOCS)


def _eager_reference(tmp_path: Path, server: LlmTestServer, corpus: Path,
                     method: str = "sentences") -> dict[str, tuple[str, str]]:
    """The units (id → kind, text) an in-process ingest with the plugin builds."""
    with local_client(llm_settings(tmp_path / f"clean-{method}", server,
                                   **embedder_settings(server), **METHOD_ENV)) as client:
        job = client.ingest(INDEX, [corpus], method=method)
        assert job.state is JobState.SUCCEEDED and not job.errors, job.reason
        return kinds_and_texts(client)


def _assert_built_as_eager(c: Cluster, job: Job, got: dict[str, tuple[str, str]],
                           stored: int, expected: dict[str, tuple[str, str]]) -> None:
    """The job succeeded with the eager run's exact units: none lost, none left over in
    the state store, each in both engines once (stops every worker first: the embedded
    engines allow one process)."""
    c.stop_all()
    assert job.state is JobState.SUCCEEDED, job.reason
    assert not job.errors
    assert got == expected
    assert stored == len(expected)
    assert engine_counts(c) == (len(expected), len(expected))
    assert {p: job.phases.get(p) for p in PHASES} == {
        "sentences.sentences": "documents", "sentences.words": "groups",
        "sentences.tree": "levels"}


def _stored_units(client: LocalClient) -> int:
    return sum(client.service.backends.state.count_units(INDEX).values())


def test_workers_build_the_plugin_units_the_eager_run_builds(
        tmp_path: Path, corpus: Path,
        start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """Worker processes that know the method only through its entry point run its
    documents, groups and levels phases and build exactly the eager run's units."""
    server = start_server()
    expected = _eager_reference(tmp_path, server, corpus)
    c = cluster(server, stage2_batch_entities=8, **embedder_settings(server), **METHOD_ENV)
    c.start("engines", "control,embed")
    phases = c.start("phases", PHASE_QUEUES)
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [corpus], method="sentences", wait=False)
        assert job.state is JobState.RUNNING  # returned at once: the workers run it
        job = client.jobs.wait_for_job(job.job_id, timeout_s=JOB_TIMEOUT_S)
        got, stored = kinds_and_texts(client), _stored_units(client)
    _assert_built_as_eager(c, job, got, stored, expected)
    log = phases.log_text()
    for phase in PHASES:
        assert f"stage={phase}" in log
    assert "Traceback" not in log + c.workers[0].log_text()


def test_workers_killed_in_the_groups_and_levels_phases_lose_and_duplicate_nothing(
        tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch,
        start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """SIGKILL the phase worker in the middle of the words (groups) phase and its
    replacement in the middle of the tree (levels) phase: once the broker redelivers
    their unacknowledged batches, the job succeeds with the eager run's exact units,
    each embedded once, and every phase counts each item once."""
    server = start_server()
    expected = _eager_reference(tmp_path, server, corpus)
    monkeypatch.setenv(SLOW_PHASE_VARIABLE, str(SLOW_S))  # the workers', not the eager run's
    c = cluster(server, stage1_batch_docs=8, stage2_batch_entities=3, visibility_timeout_s=10,
                task_time_limit_s=8, job_stall_timeout_s=40, reaper_interval_s=2,
                **embedder_settings(server), **METHOD_ENV)
    c.start("engines", "control,embed", concurrency=2)
    # The reaper re-drives the job should a kill land in the instant a message is
    # popped and lose it (see test_redrive.py).
    c.start_beat()
    victim = c.start("phases-1", PHASE_QUEUES, concurrency=PHASE_SLOTS, pool="threads")
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [corpus], method="sentences", wait=False)
        job = wait_until(client, job.job_id, lambda j: 0 < j.count("sentences.words").done
                          < j.count("sentences.words").total // 2)
        assert job.state is JobState.RUNNING, "the words phase ended before the kill"
        kill_mid_task(victim, c.settings.broker_url, PHASE_QUEUES.split(","), PHASE_SLOTS)
        victim = c.start("phases-2", PHASE_QUEUES, concurrency=PHASE_SLOTS, pool="threads")
        job = wait_until(client, job.job_id, lambda j: 0 < j.count("sentences.tree").done
                          < j.count("sentences.tree").total)
        assert job.state is JobState.RUNNING, "the tree phase ended before the kill"
        kill_mid_task(victim, c.settings.broker_url, PHASE_QUEUES.split(","), PHASE_SLOTS)
        c.start("phases-3", PHASE_QUEUES, concurrency=PHASE_SLOTS, pool="threads")
        job = client.jobs.wait_for_job(job.job_id, timeout_s=JOB_TIMEOUT_S)
        got, stored = kinds_and_texts(client), _stored_units(client)
    _assert_built_as_eager(c, job, got, stored, expected)
    # Redelivered batches were counted once: no phase reports more than its total.
    for phase in (*PHASES, Stage.EMBED):
        counts = job.counts[phase]
        assert counts.done + counts.failed + counts.skipped == counts.total, phase
    assert job.units_embedded == len(expected)


def test_workers_leave_an_on_request_tree_stale_and_rebuild_it(
        tmp_path: Path, corpus: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """On workers, the lazy_sentences tree (built on request) is built by the first
    ingest and left as it was by an ingest adding a document, the index record saying
    stale by one; a rebuild job, its scope carried through the task messages, builds
    it over every document: the index then holds exactly an eager build's units of
    the grown corpus."""
    server = start_server()
    (tmp_path / "grown").mkdir()
    grown = hotpot_corpus(tmp_path / "grown", limit=DOCS, extra=[
        {"title": "Zeta", "text": "Zeta is a letter. Zeta follows Epsilon."}])
    expected = _eager_reference(tmp_path, server, grown, method=LAZY_METHOD)
    c = cluster(server, stage2_batch_entities=8, **embedder_settings(server), **METHOD_ENV)
    c.start("engines", "control,embed")
    c.start("phases", PHASE_QUEUES)
    tree = f"{LAZY_METHOD}.tree"
    with local_client(c.settings) as client:
        first = client.ingest(INDEX, [corpus], method=LAZY_METHOD, wait=False)
        first = client.jobs.wait_for_job(first.job_id, timeout_s=JOB_TIMEOUT_S)
        assert first.state is JobState.SUCCEEDED and first.count(tree).done > 0, first.reason
        summaries = {k: v for k, v in kinds_and_texts(client).items() if v[0] == "summary"}
        second = client.ingest(INDEX, [grown], wait=False)
        second = client.jobs.wait_for_job(second.job_id, timeout_s=JOB_TIMEOUT_S)
        assert second.state is JobState.SUCCEEDED and tree not in second.counts
        assert {k: v for k, v in kinds_and_texts(client).items()
                if v[0] == "summary"} == summaries
        [level] = client.service.outstanding(INDEX).levels
        assert (level.state, level.changed_since) == (BuildState.STALE, 1)
        rebuilt = client.indexes.rebuild_index(INDEX, wait=False)
        rebuilt = client.jobs.wait_for_job(rebuilt.job_id, timeout_s=JOB_TIMEOUT_S)
        assert (rebuilt.kind, rebuilt.state) == (JobKind.REBUILD, JobState.SUCCEEDED)
        assert client.service.outstanding(INDEX).levels[0].state is BuildState.CURRENT
        got = kinds_and_texts(client)
    assert got == expected
