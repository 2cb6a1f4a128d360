"""Settling job changes: a redelivered task or a duplicate chord callback changes the
job record once (workers/progress.py), on the embedded state store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hopindex.backends.state.sqlite_store import SqliteStateStore
from hopindex.core.models import Job, JobState, Stage
from hopindex.scheduler.progress import claim_phase, is_cancelled, record_progress, settle
from hopindex.testing.contracts.state_records import new_job


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStateStore]:
    opened = SqliteStateStore(tmp_path / "state.sqlite3")
    yield opened
    opened.close()


def _running(store: SqliteStateStore) -> Job:
    job = new_job("idx")
    job.state = JobState.RUNNING
    store.create_job(job)
    return job


def test_a_key_is_applied_once(store: SqliteStateStore) -> None:
    """The same task key reporting twice (a redelivered task) counts once; another key
    counts again; updated_at moves with each applied change."""
    job = _running(store)
    first = record_progress(store, job.job_id, "extractive.stage1", done=3, key="task:a")
    again = record_progress(store, job.job_id, "extractive.stage1", done=3, key="task:a")
    other = record_progress(store, job.job_id, "extractive.stage1", done=2, key="task:b")
    assert first.count("extractive.stage1").done == 3
    assert again.count("extractive.stage1").done == 3
    assert other.count("extractive.stage1").done == 5
    assert other.updated_at >= first.updated_at > job.updated_at - 1


def test_settle_reports_whether_it_applied(store: SqliteStateStore) -> None:
    """The second settle of a key leaves the record as it was and says so."""
    job = _running(store)

    def bump(record: Job) -> None:
        record.units_embedded += 1

    assert settle(store, job.job_id, bump, key="k")[1] is True
    updated, applied = settle(store, job.job_id, bump, key="k")
    assert applied is False and updated.units_embedded == 1


def test_outside_a_task_the_empty_key_always_applies(store: SqliteStateStore) -> None:
    """Without a running task there is no key to settle by: every call counts."""
    job = _running(store)
    record_progress(store, job.job_id, Stage.EMBED, done=1)
    assert record_progress(store, job.job_id, Stage.EMBED, done=1).counts[Stage.EMBED].done == 2


def test_one_claim_per_phase_and_none_when_stopped(store: SqliteStateStore) -> None:
    """The first claim of a phase wins (outside a task every claimant has the same empty
    key, as a redelivered callback would); a cancelled job grants no claim."""
    job = _running(store)
    assert claim_phase(store, job.job_id, "stage2") is True
    assert claim_phase(store, job.job_id, "stage2") is True  # same run, redelivered

    def other_claim(record: Job) -> None:
        record.settled[-1] = "phase:finalize=task:someone-else"

    store.update_job(job.job_id, other_claim)
    assert claim_phase(store, job.job_id, "finalize") is False

    def cancel(record: Job) -> None:
        record.state = JobState.CANCELLED

    store.update_job(job.job_id, cancel)
    assert claim_phase(store, job.job_id, "embed-stage2") is False
    assert is_cancelled(store, job.job_id)
