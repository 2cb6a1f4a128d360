"""Job state changes and the events each one publishes (DESIGN.md §7).

Every change of a job's state goes through here, so the event log and the job
record never disagree: ``job.started``, ``job.progress`` (per phase, and at most
every ``HOPINDEX_PROGRESS_EVENT_INTERVAL_S`` within one), ``job.failed``,
``job.cancelled`` and ``index.ready``.
"""

from __future__ import annotations

import time
from typing import Any

from hopindex.core.errors import HopindexError, InvalidInputError, NotFoundError
from hopindex.core.events import EventType
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobState, Stage
from hopindex.scheduler.events import emit_event
from hopindex.workers.progress import claim_phase, settle
from hopindex.workers.runtime import Runtime

log = get_logger(__name__)


def publish(runtime: Runtime, event_type: EventType, job: Job, data: dict[str, Any]) -> None:
    """Append an event; an event log outage is logged, never allowed to fail the job."""
    try:
        emit_event(runtime.backends.events, event_type, job.index, job.job_id, data)
    except HopindexError as exc:
        log.error("event_not_published", event_type=event_type.value, job_id=job.job_id,
                  error=str(exc))


def progress_data(job: Job) -> dict[str, Any]:
    return {"state": job.state.value, "kind": job.kind.value,
            "counts": {stage.value: c.as_dict() for stage, c in job.counts.items()},
            "errors": len(job.errors)}


def job_started(runtime: Runtime, job: Job) -> None:
    publish(runtime, EventType.JOB_STARTED, job, progress_data(job))


def start_phase(runtime: Runtime, job_id: str, phase: str, stage: Stage, total: int) -> bool:
    """Claim ``phase`` (False: a duplicate callback, or the job stopped), set the
    stage's total and publish a progress event."""
    state = runtime.backends.state
    if not claim_phase(state, job_id, phase):
        log.info("phase_skipped", job_id=job_id, phase=phase)
        return False

    def change(job: Job) -> None:
        job.counts[stage].total += total
        job.events_at = time.time()

    job, _ = settle(state, job_id, change, key=f"total:{phase}")
    publish(runtime, EventType.JOB_PROGRESS, job, {**progress_data(job), "phase": phase})
    return True


def maybe_progress(runtime: Runtime, job: Job) -> None:
    """Publish ``job.progress`` when the last one is older than the interval.

    The check-and-stamp is one atomic job update, so many workers finishing tasks
    at once publish one event, not one each.
    """
    interval_s = runtime.settings.progress_event_interval_s
    if job.state is not JobState.RUNNING or time.time() - job.events_at < interval_s:
        return
    claimed = False

    def change(record: Job) -> None:
        nonlocal claimed
        now = time.time()
        if now - record.events_at >= interval_s:
            record.events_at = now
            claimed = True

    updated = runtime.backends.state.update_job(job.job_id, change)
    if claimed:
        publish(runtime, EventType.JOB_PROGRESS, updated, progress_data(updated))


def fail_job(runtime: Runtime, job_id: str, reason: str) -> Job | None:
    """Mark a running job failed with ``reason``; a job already final is left alone."""
    failed = False

    def change(job: Job) -> None:
        nonlocal failed
        if job.state.is_final:
            return
        job.state = JobState.FAILED
        job.reason = reason
        job.finished_at = job.updated_at = time.time()
        failed = True

    try:
        job = runtime.backends.state.update_job(job_id, change)
    except NotFoundError:
        return None
    if failed:
        _forget_dispatches(runtime, job_id)
        log.error("job_failed", job_id=job_id, index=job.index, reason=reason)
        publish(runtime, EventType.JOB_FAILED, job, {**progress_data(job), "reason": reason})
    return job


def cancel_job(runtime: Runtime, job_id: str) -> Job:
    """Stop scheduling the job's work: queued tasks find it cancelled and do nothing.

    Writes already made stay (they are whole units); the job's unfinished documents
    keep no content hash, so the next ingest of them redoes just those.
    """
    cancelled = False

    def change(job: Job) -> None:
        nonlocal cancelled
        if job.state.is_final:
            raise InvalidInputError(f"job {job_id} is already {job.state.value}",
                                    where="job_id")
        job.state = JobState.CANCELLED
        job.reason = "cancelled by request"
        job.finished_at = job.updated_at = time.time()
        cancelled = True

    job = runtime.backends.state.update_job(job_id, change)
    if cancelled:
        _forget_dispatches(runtime, job_id)
        log.info("job_cancelled", job_id=job_id, index=job.index)
        publish(runtime, EventType.JOB_CANCELLED, job, progress_data(job))
    return job


def job_succeeded(runtime: Runtime, job_id: str, index: str) -> Job:
    """Finish the job and publish ``index.ready`` with the index's units per kind."""
    succeeded = False

    def change(job: Job) -> None:
        nonlocal succeeded
        if job.state is not JobState.RUNNING:
            return
        job.counts[Stage.FINALIZE].total = 1
        job.counts[Stage.FINALIZE].done = 1
        job.state = JobState.SUCCEEDED
        job.finished_at = job.updated_at = time.time()
        succeeded = True

    state = runtime.backends.state
    job = state.update_job(job_id, change)
    units = {kind.value: n for kind, n in state.count_units(index).items()}
    log.info("index_ready", job_id=job_id, index=index, state=job.state.value, units=units,
             duration_s=round((job.finished_at or time.time()) - job.created_at, 3))
    if succeeded:
        _forget_dispatches(runtime, job_id)
        failed_items = sorted({e.item for e in job.errors})
        publish(runtime, EventType.INDEX_READY, job, {
            "units": units, "documents": len(state.document_hashes(index)),
            "failed": failed_items, "llm": job.llm_total.as_dict(),
            "duration_s": round((job.finished_at or 0) - job.created_at, 3)})
    return job


def _forget_dispatches(runtime: Runtime, job_id: str) -> None:
    """A finished job is never re-driven: its fan-out records can go."""
    try:
        runtime.backends.state.clear_dispatches(job_id)
    except HopindexError as exc:
        # Left-over records are harmless (the reaper skips final jobs); a failed
        # cleanup must not turn a finished job into an error.
        log.warning("dispatches_not_cleared", job_id=job_id, error=str(exc))
