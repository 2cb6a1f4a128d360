"""The periodic reaper (``hopindex beat``): running jobs that stopped progressing
are failed with a reason instead of staying "running" forever (DESIGN.md §5).

A job stalls when its messages are lost (a broker flushed, a chord whose callback
never fires) rather than when a worker dies: a dead worker's messages come back
after the visibility timeout and the job moves on. Failing it is safe because
nothing is half-written: its unfinished documents keep no content hash, so
ingesting the same input again redoes exactly those.
"""

from __future__ import annotations

import time

from hopindex.backends.protocols import JobStore
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobState, Stage
from hopindex.scheduler.lifecycle import fail_job
from hopindex.workers.app import REAP_TASK, app
from hopindex.workers.runtime import current_runtime

log = get_logger(__name__)

# Jobs looked at per run; running jobs are few, and the newest come first.
SCAN_LIMIT = 1000


def stalled_jobs(jobs: JobStore, now: float, stall_timeout_s: float) -> list[Job]:
    """Running jobs with no task report for longer than ``stall_timeout_s``."""
    return [job for job in jobs.list_jobs(limit=SCAN_LIMIT)
            if job.state is JobState.RUNNING and now - job.updated_at > stall_timeout_s]


def stall_reason(job: Job, now: float) -> str:
    pending = [stage.value for stage in Stage
               if job.counts[stage].total > sum((job.counts[stage].done,
                                                 job.counts[stage].failed,
                                                 job.counts[stage].skipped))]
    where = f" with {', '.join(pending)} unfinished" if pending else ""
    return (f"stalled: no task reported for {now - job.updated_at:.0f} s "
            f"(HOPINDEX_JOB_STALL_TIMEOUT_S){where}; ingest the same input again to redo "
            "the unfinished documents")


@app.task(name=REAP_TASK, job_bound=False)  # type: ignore[untyped-decorator]  # celery is untyped
def reap() -> list[str]:
    """Fail every stalled job; returns their ids."""
    runtime = current_runtime()
    now = time.time()
    reaped = []
    for job in stalled_jobs(runtime.backends.state, now, runtime.settings.job_stall_timeout_s):
        if fail_job(runtime, job.job_id, stall_reason(job, now)) is not None:
            reaped.append(job.job_id)
    log.info("reaper_finished", reaped=len(reaped))
    return reaped
