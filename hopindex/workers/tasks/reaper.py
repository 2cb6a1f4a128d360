"""The reaper as a beat task: re-drives or fails stalled jobs (hopindex/scheduler/reaper.py)."""

from __future__ import annotations

from hopindex.scheduler.reaper import reap
from hopindex.scheduler.task_names import REAP
from hopindex.workers.app import app
from hopindex.workers.runtime import current_runtime


@app.task(name=REAP, job_bound=False)  # type: ignore[untyped-decorator]  # celery is untyped
def reap_stalled_jobs() -> list[str]:
    """Returns the ids of the jobs failed or cancelled."""
    return reap(current_runtime())
