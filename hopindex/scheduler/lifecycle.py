"""Job state changes and the events each one publishes (docs/architecture.md).

Every change of a job's state goes through here, so the event log and the job
record never disagree: ``job.started``, ``job.progress`` (per phase, at most
every ``HOPINDEX_PROGRESS_EVENT_INTERVAL_S`` within one, and when a cancel is asked),
``job.failed``, ``job.cancelled`` and ``index.ready``.
"""

from __future__ import annotations

import time
from typing import Any, cast

from hopindex.core.errors import HopindexError, JobFinishedError, NotFoundError
from hopindex.core.events import EventType
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobState, Stage
from hopindex.core.redact import redact_values
from hopindex.scheduler.events import emit_event
from hopindex.scheduler.failed_items import keep_stale_units
from hopindex.scheduler.job_traces import end_trace
from hopindex.scheduler.progress import claim_phase, settle
from hopindex.scheduler.runtime import Runtime
from hopindex.scheduler.staging import drop_staged
from hopindex.scheduler.task_names import START_QUEUED

log = get_logger(__name__)

# What a cancelled job's record says when the caller gave no reason of its own (a
# server shutting down gives one).
CANCELLED_BY_REQUEST = "cancelled by request"


def publish(runtime: Runtime, event_type: EventType, job: Job, data: dict[str, Any]) -> None:
    """Append an event; an event log outage is logged, never allowed to fail the job."""
    try:
        emit_event(runtime, event_type, job.index, job.job_id,
                   cast("dict[str, Any]", redact_values(data)))
    except Exception as exc:  # whatever the log raises, the job's own change stands
        log.error("event_not_published", event_type=event_type.value, job_id=job.job_id,
                  error=str(exc))


def progress_data(job: Job) -> dict[str, Any]:
    return {"state": job.state.value, "kind": job.kind.value,
            "counts": {stage: c.as_dict() for stage, c in job.counts.items()},
            "progress": job.progress(), "errors": len(job.errors), "missing": job.missing()}


def job_started(runtime: Runtime, job: Job) -> None:
    publish(runtime, EventType.JOB_STARTED, job, progress_data(job))


def start_phase(runtime: Runtime, job_id: str, phase: str, stage: str, total: int, *,
                kind: str = "") -> bool:
    """Claim ``phase`` (False: a duplicate callback, or the job stopped), add ``total``
    to the counts of ``stage`` (a step, or a method phase of ``kind``) and publish a
    progress event."""
    state = runtime.backends.state
    if not claim_phase(state, job_id, phase):
        log.info("phase_skipped", job_id=job_id, phase=phase)
        # Phases run one after another: the callback that would start this one runs
        # once every task of the previous phase has returned, so a cancelling job
        # has no work left running.
        finish_cancel(runtime, job_id)
        return False

    def change(job: Job) -> None:
        job.count(stage).total += total
        if kind:
            job.phases[stage] = kind
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
    # A job waiting on the provider's batches moves too: its other tasks finish items.
    moving = job.state in (JobState.RUNNING, JobState.WAITING_ON_PROVIDER)
    if not moving or time.time() - job.events_at < interval_s:
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
        _keep_stale(runtime, job)
        log.error("job_failed", job_id=job_id, index=job.index, reason=reason)
        end_trace(job)
        publish(runtime, EventType.JOB_FAILED, job, {**progress_data(job), "reason": reason})
        _forget_job_records(runtime, job)
    return job


def cancel_job(runtime: Runtime, job_id: str, reason: str = CANCELLED_BY_REQUEST) -> Job:
    """Stop the job: it reads ``cancelling`` until the tasks already running have
    finished, then ``cancelled`` (see :func:`finish_cancel`), with counts that no
    longer move.

    Queued tasks find the job stopping and do nothing; writes already made stay
    (they are whole units). The job's unfinished documents keep no content hash, so
    the index reads ``partial`` until an ingest or a repair redoes just those.
    """
    asked = False
    was_idle = False
    was_waiting = False

    def change(job: Job) -> None:
        nonlocal asked, was_idle, was_waiting
        if job.state.is_final:
            raise JobFinishedError(f"job {job_id} is already {job.state.value}",
                                   where="job_id")
        if job.state is JobState.CANCELLING:
            return
        # Nothing of a paused, queued or waiting job runs: no phase end is coming to
        # finish it (a job waiting on the provider's batches holds no worker).
        was_waiting = job.state is JobState.WAITING_ON_PROVIDER
        was_idle = was_waiting or job.state in (JobState.PAUSED, JobState.QUEUED)
        job.state = JobState.CANCELLING
        job.reason = reason
        job.updated_at = time.time()
        asked = True

    job = runtime.backends.state.update_job(job_id, change)
    if asked:
        log.info("job_cancelling", job_id=job_id, index=job.index)
        publish(runtime, EventType.JOB_PROGRESS, job, progress_data(job))
    if was_waiting:
        return _cancel_waiting(runtime, job)
    if was_idle:
        # A paused job's tasks ended or wait for a resume that now finds it stopping.
        return finish_cancel(runtime, job_id) or job
    return job


def _cancel_waiting(runtime: Runtime, job: Job) -> Job:
    """End a job that was waiting on the provider's batches: they go on at the provider,
    and are billed, until they are cancelled there, so that is asked first (the job is
    ``cancelling`` by now, so the batch poller sends none of its tasks again). A
    provider that cannot be told does not keep the job from ending: its record says
    so."""
    from hopindex.scheduler.provider_batches import cancel_provider_batches

    note = ""
    try:
        cancel_provider_batches(runtime, job)
    except Exception as exc:  # whatever the provider answers, the cancel stands
        log.error("provider_batches_not_cancelled", job_id=job.job_id, index=job.index,
                  error=f"{type(exc).__name__}: {exc}")
        note = (f"its provider batches could not be cancelled ({type(exc).__name__}: "
                f"{exc}); they may still run and be billed")
    return finish_cancel(runtime, job.job_id, note) or job


def finish_cancel(runtime: Runtime, job_id: str, note: str = "") -> Job | None:
    """Turn a ``cancelling`` job ``cancelled``: called when a phase of it ends (every task
    of that phase has returned, so none of its work is still running) or by the reaper
    when a cancelling job has gone quiet. ``note`` is added to the reason."""
    cancelled = False

    def change(job: Job) -> None:
        nonlocal cancelled
        if job.state is not JobState.CANCELLING:
            return
        job.state = JobState.CANCELLED
        if note:
            job.reason = f"{job.reason}; {note}" if job.reason else note
        job.finished_at = job.updated_at = time.time()
        cancelled = True

    try:
        job = runtime.backends.state.update_job(job_id, change)
    except NotFoundError:
        return None
    if cancelled:
        _keep_stale(runtime, job)
        log.info("job_cancelled", job_id=job_id, index=job.index)
        end_trace(job)
        publish(runtime, EventType.JOB_CANCELLED, job, progress_data(job))
        _forget_job_records(runtime, job)
    return job


def job_succeeded(runtime: Runtime, job_id: str, index: str) -> Job:
    """Finish the job and publish ``index.ready`` with the index's units per kind.

    A job some of whose work items failed for good ends ``succeeded_with_errors``:
    those items are outstanding on the index (``FailedItemStore``) and the event and
    the record say what is missing.
    """
    succeeded = False

    def change(job: Job) -> None:
        nonlocal succeeded
        if job.state is not JobState.RUNNING:
            return
        job.count(Stage.FINALIZE).total = 1
        job.count(Stage.FINALIZE).done = 1
        job.state = (JobState.SUCCEEDED_WITH_ERRORS if job.missing()
                     else JobState.SUCCEEDED)
        job.finished_at = job.updated_at = time.time()
        succeeded = True

    state = runtime.backends.state
    job = state.update_job(job_id, change)
    units = {kind.value: n for kind, n in state.count_units(index).items()}
    log.info("index_ready", job_id=job_id, index=index, state=job.state.value, units=units,
             missing=job.missing(),
             duration_s=round((job.finished_at or time.time()) - job.created_at, 3))
    if succeeded:
        end_trace(job)
        failed_items = sorted({e.item for e in job.errors})
        publish(runtime, EventType.INDEX_READY, job, {
            "state": job.state.value, "units": units,
            "documents": len(state.document_hashes(index)),
            "failed": failed_items, "missing": job.missing(), "llm": job.llm_total.as_dict(),
            "duration_s": round((job.finished_at or 0) - job.created_at, 3)})
        _forget_job_records(runtime, job)
    return job


def _keep_stale(runtime: Runtime, job: Job) -> None:
    """The replaced units of a job that ends before its embed phase stay outstanding on
    the index: they are reachable from nowhere else once the job record is done."""
    if not job.stale_units:
        return
    try:
        keep_stale_units(runtime.backends.state, job)
    except HopindexError as exc:
        log.error("stale_units_not_kept", job_id=job.job_id, units=len(job.stale_units),
                  error=str(exc))


def _forget_job_records(runtime: Runtime, job: Job) -> None:
    """A finished job is never re-driven nor resumed: its fan-out records, its scope and
    its LLM budget account can go, and the next job of its index may start.

    Called after the job's final event is published, so that event comes as soon after
    the final state as it can (a client that saw the state and reads the log finds it)
    and before the next job's ``job.started``."""
    _next_turn(runtime, job)
    try:
        runtime.backends.state.clear_dispatches(job.job_id)
        runtime.backends.state.delete_job_scope(job.job_id)
        drop_staged(runtime.backends.state, job)  # a job cancelled in the queue
        if job.budget.is_limited and runtime.backends.llm is not None:
            runtime.backends.llm.forget_budget(job.job_id)
    except HopindexError as exc:
        # Left-over records are harmless (the reaper skips final jobs, and a budget
        # account is read only by its own job's calls); a failed cleanup must not turn
        # a finished job into an error.
        log.warning("job_records_not_cleared", job_id=job.job_id, error=str(exc))


def _next_turn(runtime: Runtime, job: Job) -> None:
    """With workers, the index's next queued job starts now that this one ended
    (scheduler/turns.py). Without, the process that submitted it waits for this end."""
    if not runtime.settings.broker_url:
        return
    try:
        runtime.signature(START_QUEUED, job.index, immutable=True).apply_async()
    except Exception as exc:  # a broker outage: the reaper starts the line instead
        log.warning("next_job_not_sent", job_id=job.job_id, index=job.index,
                    error=f"{type(exc).__name__}: {exc}")
