"""Celery signal hooks: task runs are timed, counted by outcome and error, logged with
their job's context, and a finished job's documents count once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from prometheus_client import REGISTRY

from hopindex.backends.registry import Backends
from hopindex.backends.state.sqlite_store import SqliteStateStore
from hopindex.core.models import Job, JobKind, JobState, Stage
from hopindex.core.settings import MetricsMode, Settings
from hopindex.monitoring.tasks import (
    _count_documents,
    _on_postrun,
    _on_prerun,
    _on_retry,
    document_outcomes,
    job_context,
    stage_of,
)
from hopindex.workers.app import app, configure_app
from hopindex.workers.runtime import Runtime, bind_runtime
from hopindex.workers.tasks.control import after_phase
from hopindex.workers.tasks.phases import documents as stage1
from hopindex.workers.tasks.webhooks import deliver_webhook


@app.task(name="hopindex.tests.context")  # type: ignore[untyped-decorator]  # celery is untyped
def context_task(job_id: str, index: str, items: list[int]) -> dict[str, Any]:
    """Returns the structlog context its run logs with."""
    return dict(structlog.contextvars.get_contextvars())


@app.task(name="hopindex.tests.boom", job_bound=False)  # type: ignore[untyped-decorator]  # untyped
def boom_task() -> None:
    raise KeyError("boom")


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def eager() -> Iterator[None]:
    """The app in eager mode with metrics on (tasks run in this process)."""
    configure_app(Settings())
    yield


def test_job_context_reads_job_and_index_from_task_arguments() -> None:
    """Job tasks take (job_id, index, ...); chord callbacks take their header's results
    first; tasks outside any job give no context."""
    assert job_context(stage1, ("job-1", "wiki", "extractive.stage1", 0, ["d1"]), {}) == {
        "job_id": "job-1", "index": "wiki"}
    assert job_context(after_phase, ([{"units": []}], "job-2", "wiki", 0, 0), {}) == {
        "job_id": "job-2", "index": "wiki"}
    assert job_context(stage1, (), {"job_id": "job-3", "index": "x"}) == {"job_id": "job-3",
                                                                          "index": "x"}
    assert job_context(deliver_webhook, ("hook-1", "event-1"), {}) == {}


def test_a_task_run_logs_with_its_job_context_and_restores_the_callers(eager: None) -> None:
    """Inside the run every log line carries job_id, index and stage; afterwards the
    caller's own context is back (eager runs nest tasks inside tasks)."""
    structlog.contextvars.bind_contextvars(job_id="outer-job", stage="outer")
    try:
        seen = context_task.apply(args=("job-7", "wiki", [1])).get()
        assert seen == {"job_id": "job-7", "index": "wiki", "stage": "tests.context"}
        assert structlog.contextvars.get_contextvars() == {"job_id": "outer-job",
                                                           "stage": "outer"}
    finally:
        structlog.contextvars.clear_contextvars()


def test_succeeded_and_failed_runs_are_timed_and_counted(eager: None) -> None:
    """A succeeded run and two failed ones (as a worker reports a failure, and as an eager
    run raises into its caller): each counted under its outcome with one duration
    observation; the worker-style failure also by its error type."""
    ok = sample("hopindex_stage_tasks_total", stage="tests.context", outcome="succeeded")
    timed = sample("hopindex_stage_task_duration_seconds_count", stage="tests.context")
    failed = sample("hopindex_stage_tasks_total", stage="tests.boom", outcome="failed")
    errors = sample("hopindex_stage_task_failures_total", stage="tests.boom", error="KeyError")
    context_task.apply(args=("job-8", "wiki", []))
    assert boom_task.apply(throw=False).state == "FAILURE"
    with pytest.raises(KeyError):
        boom_task.apply().get()
    assert sample("hopindex_stage_tasks_total", stage="tests.context",
                  outcome="succeeded") - ok == 1
    assert sample("hopindex_stage_task_duration_seconds_count", stage="tests.context") - timed == 1
    assert sample("hopindex_stage_tasks_total", stage="tests.boom", outcome="failed") - failed == 2
    assert sample("hopindex_stage_task_failures_total", stage="tests.boom",
                  error="KeyError") - errors == 1
    assert sample("hopindex_stage_tasks_in_progress", stage="tests.context") == 0
    assert sample("hopindex_stage_tasks_in_progress", stage="tests.boom") == 0


def test_retries_count_by_error_type(eager: None) -> None:
    """task_retry counts the error that sent the run back to the queue."""
    before = sample("hopindex_stage_task_retries_total", stage="phase.documents",
                    error="TimeoutError")
    _on_retry(sender=stage1, reason=TimeoutError("slow provider"))
    assert sample("hopindex_stage_task_retries_total", stage="phase.documents",
                  error="TimeoutError") - before == 1


def test_a_phase_tasks_label_is_its_phase() -> None:
    """A phase task is labelled with the method's phase, not the shared task name."""
    assert stage_of(stage1.name, ("j", "wiki", "indexrag.stage1", 0, [])) == "indexrag.stage1"
    assert stage_of(stage1.name) == "phase.documents"
    assert stage_of(after_phase.name, ([], "j", "wiki", "x.y")) == "control.after_phase"


def test_metrics_off_binds_context_but_records_nothing() -> None:
    """HOPINDEX_METRICS=off: the log context still works, no counter moves."""
    configure_app(Settings(metrics=MetricsMode.OFF))
    try:
        before = sample("hopindex_stage_tasks_total", stage="x.stage1", outcome="succeeded")
        _on_prerun(task=stage1, task_id="t-off", args=("job-9", "wiki", "x.stage1", 0, []))
        assert structlog.contextvars.get_contextvars()["job_id"] == "job-9"
        _on_postrun(task=stage1, task_id="t-off", args=("job-9", "wiki", "x.stage1", 0, []),
                    state="SUCCESS")
        assert "job_id" not in structlog.contextvars.get_contextvars()
        assert sample("hopindex_stage_tasks_total", stage="x.stage1",
                      outcome="succeeded") == before
    finally:
        configure_app(Settings())


def _job(kind: JobKind, state: JobState) -> Job:
    job = Job(job_id=f"job-{kind.value}-{state.value}", index="docs", kind=kind, state=state)
    job.count(Stage.VALIDATE).done, job.count(Stage.VALIDATE).failed = 9, 1
    job.phases["m.stage1"] = "documents"
    job.count("m.stage1").done, job.count("m.stage1").failed = 6, 1
    job.count("m.stage1").skipped = 2
    return job


def test_document_outcomes_of_ingest_and_delete_jobs() -> None:
    """Ingest: indexed, unchanged and failed (validation or stage 1); delete: deleted."""
    assert document_outcomes(_job(JobKind.INGEST, JobState.SUCCEEDED)) == {
        "indexed": 6, "unchanged": 2, "failed": 2}
    assert document_outcomes(_job(JobKind.DELETE, JobState.SUCCEEDED)) == {
        "deleted": 9, "failed": 1}


def test_a_finished_jobs_documents_count_once(tmp_path: Path) -> None:
    """finalize redelivered runs the hook twice: the documents count once (settled on the
    job record); a job that did not succeed counts nothing."""
    store = SqliteStateStore(tmp_path / "state.sqlite3")
    settings = Settings(data_dir=tmp_path).resolved()
    bind_runtime(Runtime(settings=settings, backends=Backends(settings, state=store)))
    try:
        done, failed = _job(JobKind.INGEST, JobState.SUCCEEDED), _job(JobKind.INGEST,
                                                                       JobState.FAILED)
        store.create_job(done)
        store.create_job(failed)
        before = {o: sample("hopindex_documents_ingested_total", index="docs", outcome=o)
                  for o in ("indexed", "unchanged", "failed")}
        for _ in range(2):
            _count_documents(done.job_id)
            _count_documents(failed.job_id)
        after = {o: sample("hopindex_documents_ingested_total", index="docs", outcome=o)
                 for o in before}
        assert {o: after[o] - before[o] for o in before} == {"indexed": 6, "unchanged": 2,
                                                             "failed": 2}
    finally:
        bind_runtime(None)
        store.close()
