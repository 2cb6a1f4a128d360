"""Job-record bookkeeping shared by every task: counts per stage and per-item errors.

Celery may run a task twice: a worker killed after its writes but before its
acknowledgement gets the message redelivered (``acks_late``), and a chord callback
can fire again when its header is redelivered. Writes are idempotent by unit id;
counts are made so by *settling*: each change carries a key (the task run's id or
a phase name), and a key the job's store has settled is not applied again
(``JobStore.update_job(..., once=key)``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from celery import current_task

from hopindex.backends.protocols import JobStore
from hopindex.core.errors import JobPausedError
from hopindex.core.models import ItemError, Job, JobState, LlmUsage

# Task ids are uuid4s; 16 hex digits keep collisions out of reach (2^64) while a job of
# thousands of task runs keeps its record small.
_KEY_CHARS = 16


def current_task_key() -> str:
    """The key of the task run executing now ('' outside a task): stable across redelivery."""
    task_id = getattr(getattr(current_task, "request", None), "id", None)
    return task_key(task_id) if task_id else ""


def task_key(task_id: str) -> str:
    """The settle key of the task with ``task_id``: what its run records on the job."""
    return f"task:{task_id.replace('-', '')[:_KEY_CHARS]}"


def settle(jobs: JobStore, job_id: str, change: Callable[[Job], None], *,
           key: str | None = None) -> tuple[Job, bool]:
    """Apply ``change`` once per ``key`` (default: the running task's key).

    Returns the stored job and whether the change was applied now. Every applied
    change stamps ``updated_at``, which is what the reaper watches.
    """
    key = current_task_key() if key is None else key
    applied = False

    def guarded(job: Job) -> None:
        nonlocal applied
        change(job)
        job.updated_at = time.time()
        applied = True

    return jobs.update_job(job_id, guarded, once=key), applied


def record_progress(jobs: JobStore, job_id: str, stage: str, *, total: int = 0, done: int = 0,
                    failed: int = 0, skipped: int = 0,
                    errors: Sequence[ItemError] = (),
                    llm_usage: Mapping[str, LlmUsage] | None = None,
                    key: str | None = None) -> Job:
    def change(job: Job) -> None:
        counts = job.count(stage)
        counts.total += total
        counts.done += done
        counts.failed += failed
        counts.skipped += skipped
        job.errors.extend(errors)
        if llm_usage:
            job.add_llm_usage(dict(llm_usage))

    return settle(jobs, job_id, change, key=key)[0]


def claim_phase(jobs: JobStore, job_id: str, phase: str) -> bool:
    """True for the one task run that starts ``phase`` of a running job.

    The claim records the claiming run's key, so the same message redelivered
    after its worker died claims again and finishes the phase; another run (a
    duplicate callback) or a job cancelled or failed meanwhile gets False and
    must schedule nothing.
    """
    mine = f"phase:{phase}={current_task_key()}"
    prefix = f"phase:{phase}="
    claimed = False

    def change(job: Job) -> None:
        nonlocal claimed
        if job.state is JobState.PAUSED:
            # Not claimed and not refused: a resume sends this callback again.
            raise JobPausedError(f"job {job_id} is paused", job_id=job_id)
        # A job waiting on the provider's batches goes on when they are in: its tasks,
        # sent again, finish the phase and start the next as a running job's do.
        if job.state not in (JobState.RUNNING, JobState.WAITING_ON_PROVIDER):
            raise _NotRunningError
        holder = next((k for k in job.settled if k.startswith(prefix)), None)
        if holder is None:
            job.settled.append(mine)
            job.updated_at = time.time()
        claimed = holder in (None, mine)

    try:
        jobs.update_job(job_id, change)
    except _NotRunningError:
        return False
    return claimed


class _NotRunningError(Exception):
    """Aborts a claim without writing (update_job writes nothing when the change raises)."""


def working_job(jobs: JobStore, job_id: str) -> Job | None:
    """The job when its tasks may work on it; None when it is gone or stopping (its
    remaining tasks start no new work). Raises ``JobPausedError`` when it is paused:
    the task ends without its work, which a resume sends again."""
    job = jobs.get_job(job_id)
    if job is None or job.state.is_stopping:
        return None
    if job.state is JobState.PAUSED:
        raise JobPausedError(f"job {job_id} is paused", job_id=job_id)
    return job


def is_cancelled(jobs: JobStore, job_id: str) -> bool:
    """True when the job is gone or stopping (cancelling, cancelled, failed): its
    remaining tasks start no new work."""
    job = jobs.get_job(job_id)
    return job is None or job.state.is_stopping


def batched(items: Sequence[str], size: int) -> list[list[str]]:
    return [list(items[i:i + size]) for i in range(0, len(items), size)]
