"""The reaper as a beat task: re-drives or fails stalled jobs (hopindex/scheduler/reaper.py)
and starts the lines of queued jobs that stopped moving (hopindex/scheduler/turns.py)."""

from __future__ import annotations

from hopindex.scheduler.reaper import reap, stalled_lines
from hopindex.scheduler.task_names import REAP
from hopindex.scheduler.turns import restart_lines
from hopindex.workers.app import app
from hopindex.workers.runtime import current_runtime


@app.task(name=REAP, job_bound=False)  # type: ignore[untyped-decorator]  # celery is untyped
def reap_stalled_jobs() -> list[str]:
    """Returns the ids of the jobs failed or cancelled."""
    runtime = current_runtime()
    reaped = reap(runtime)
    restart_lines(runtime, stalled_lines(runtime))
    return reaped
