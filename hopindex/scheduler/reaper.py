"""The periodic reaper (``hopindex beat``): running jobs that stopped progressing
are re-driven, and failed with a reason when re-driving cannot help (docs/architecture.md).

A job stalls when its messages are lost (a broker flushed, a worker killed in the
instant between popping a message and recording it as unacknowledged), not when a
worker dies: a dead worker's messages come back after the visibility timeout and
the job moves on. A stalled job gets its newest fan-out's unfinished work sent
again (scheduler/redrive.py), at most ``HOPINDEX_JOB_MAX_REDRIVES`` times; after
that, or with nothing recorded to re-send, it is failed. Failing is safe because
nothing is half-written: its unfinished documents keep no content hash, so
ingesting the same input again redoes exactly those.

Only running and cancelling jobs are looked at: a job paused on its LLM budget
(scheduler/pause.py) waits for a resume, however long, and a job waiting on the
provider's batches (``waiting_on_provider``) for their results, within the provider's
completion window: neither is stalled (the batch poller, scheduler/provider_batches.py,
watches the latter).
"""

from __future__ import annotations

import time

from hopindex.backends.protocols import JobStore
from hopindex.core.events import EventType
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobState
from hopindex.scheduler.lifecycle import fail_job, finish_cancel, progress_data, publish
from hopindex.scheduler.redrive import plan_redrive
from hopindex.scheduler.runtime import Runtime

log = get_logger(__name__)

# Jobs looked at per run; running jobs are few, and the newest come first.
SCAN_LIMIT = 1000


def stalled_jobs(jobs: JobStore, now: float, stall_timeout_s: float,
                 state: JobState = JobState.RUNNING) -> list[Job]:
    """Jobs in ``state`` with no task report for longer than ``stall_timeout_s``."""
    return [job for job in jobs.list_jobs(limit=SCAN_LIMIT)
            if job.state is state and now - job.updated_at > stall_timeout_s]


def stalled_lines(runtime: Runtime) -> list[str]:
    """Indexes with a job queued, its input kept, for longer than the stall timeout: the
    message that should have started it at its turn may be lost."""
    now = time.time()
    timeout_s = runtime.settings.job_stall_timeout_s
    return sorted({job.index for job in runtime.backends.state.list_jobs(limit=SCAN_LIMIT)
                   if job.state is JobState.QUEUED and job.staged >= 0
                   and now - job.updated_at > timeout_s})


def stall_reason(job: Job, now: float) -> str:
    pending = [stage for stage, counts in job.counts.items()
               if counts.total > counts.finished]
    where = f" with {', '.join(pending)} unfinished" if pending else ""
    redriven = f" after {len(job.redrives)} re-drive(s)" if job.redrives else ""
    return (f"stalled: no task reported for {now - job.updated_at:.0f} s "
            f"(HOPINDEX_JOB_STALL_TIMEOUT_S){where}{redriven}; ingest the same input again "
            "to redo the unfinished documents")


def redrive_job(runtime: Runtime, job: Job, now: float) -> bool:
    """Re-send what the stalled ``job`` is missing; False when there is nothing to
    re-send or the re-drive budget is spent (the caller then fails the job)."""
    state = runtime.backends.state
    if len(job.redrives) >= runtime.settings.job_max_redrives:
        return False
    dispatch = state.last_dispatch(job.job_id)
    if dispatch is None:
        return False
    if runtime.app is None:
        return False
    plan = plan_redrive(runtime.app, runtime.backends.state, job, dispatch)
    note = f"{plan.describe()} after {now - job.updated_at:.0f} s without progress"
    claimed = False

    def change(record: Job) -> None:
        nonlocal claimed
        # Only the job as it was read: a task that reported meanwhile means the
        # job is moving again, and another reaper run may have re-driven it.
        if record.state is JobState.RUNNING and record.updated_at == job.updated_at:
            record.redrives.append(note)
            record.updated_at = time.time()
            claimed = True

    updated = state.update_job(job.job_id, change)
    if not claimed:
        return True
    plan.send()
    log.warning("job_redriven", job_id=job.job_id, index=job.index, phase=dispatch.phase,
                tasks=len(plan.tasks), redrives=len(updated.redrives))
    publish(runtime, EventType.JOB_PROGRESS, updated, {**progress_data(updated), "redrive": note})
    return True


def reap(runtime: Runtime) -> list[str]:
    """Re-drive or fail every stalled job, and end every quiet cancelling one; returns
    the ids of the jobs failed or cancelled."""
    now = time.time()
    reaped = []
    redriven = 0
    for job in stalled_jobs(runtime.backends.state, now, runtime.settings.job_stall_timeout_s):
        try:
            if redrive_job(runtime, job, now):
                redriven += 1
                continue
        except Exception as exc:
            # A broker or store error on one job must not leave the others unreaped;
            # this job is looked at again on the next run.
            log.error("job_redrive_failed", job_id=job.job_id,
                      error=f"{type(exc).__name__}: {exc}")
            continue
        if fail_job(runtime, job.job_id, stall_reason(job, now)) is not None:
            reaped.append(job.job_id)
    # A cancelling job ends when a phase of it ends; one whose callback was lost has
    # nothing left running after this long, and nothing of it is re-sent.
    for job in stalled_jobs(runtime.backends.state, now, runtime.settings.job_stall_timeout_s,
                            JobState.CANCELLING):
        finish_cancel(runtime, job.job_id,
                      f"no task reported for {now - job.updated_at:.0f} s after the cancel")
        reaped.append(job.job_id)
    log.info("reaper_finished", reaped=len(reaped), redriven=redriven)
    return reaped
