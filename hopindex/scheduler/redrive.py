"""Re-drive a stalled job: re-send what its newest fan-out never finished.

A job stalls when a message is lost (see scheduler/canvas.py), not when a worker
dies: a dead worker's unacknowledged messages come back after the visibility
timeout, which the stall timeout exceeds. The reaper then looks at the job's
newest ``Dispatch``:

- tasks that never settled on the job (or settled but stored no result)
  are re-sent with their own ids and chord, so the chord completes as if they had
  never been lost, and a late original counts once (``settle`` keys by task id);
- when every task finished, the callback is what was lost: it is re-sent with the
  tasks' stored results and its own id, so its phase claim still holds.

Nothing is written twice: unit writes are upserts by deterministic id, and a
duplicate callback finds its phase already claimed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from celery import Celery, states

from hopindex.backends.protocols import JobStore
from hopindex.core.logging import get_logger
from hopindex.core.models import Dispatch, Job
from hopindex.scheduler.progress import task_key

log = get_logger(__name__)


@dataclass(frozen=True)
class Redrive:
    """What re-driving a job sends: lost tasks, or the callback with its results."""

    app: Celery
    dispatch: Dispatch
    tasks: list[dict[str, Any]]
    results: list[Any] | None = None

    def describe(self) -> str:
        phase = self.dispatch.phase
        if self.tasks:
            return f"re-sent {len(self.tasks)} of {len(self.dispatch.tasks)} tasks of {phase}"
        return f"re-sent the callback of {phase}"

    def send(self) -> None:
        for task in self.tasks:
            self.app.signature(task).apply_async()
        if not self.tasks:
            callback = self.app.signature(self.dispatch.callback)
            callback.clone(args=(self.results or [],)).apply_async()


def plan_redrive(app: Celery, jobs: JobStore, job: Job, dispatch: Dispatch) -> Redrive:
    """What to re-send for ``job`` from its newest fan-out ``dispatch`` (through ``app``,
    whose result backend holds the tasks' results)."""
    settled = _settled_tasks(jobs, job, dispatch.tasks)
    lost = [t for t in dispatch.tasks if task_key(task_id(t)) not in settled]
    if lost:
        return Redrive(app, dispatch, lost)
    metas = [app.backend.get_task_meta(task_id(t)) for t in dispatch.tasks]
    # Settled but no result stored: killed between its writes and its reply, and
    # its message lost too. Running it again settles nothing twice.
    unfinished = [t for t, meta in zip(dispatch.tasks, metas, strict=True)
                  if meta.get("status") != states.SUCCESS]
    if unfinished:
        return Redrive(app, dispatch, unfinished)
    return Redrive(app, dispatch, [], [meta.get("result") for meta in metas])


def waiting_tasks(jobs: JobStore, job: Job, dispatch: Dispatch, task_ids: Collection[str]
                  ) -> list[dict[str, Any]]:
    """The tasks of ``dispatch`` named by ``task_ids`` that never settled on ``job``:
    what a resume or a provider batch's end sends again (one still settled by a late
    original is not sent twice)."""
    wanted = set(task_ids)
    tasks = [t for t in dispatch.tasks if task_id(t) in wanted]
    settled = _settled_tasks(jobs, job, tasks)
    return [t for t in tasks if task_key(task_id(t)) not in settled]


def _settled_tasks(jobs: JobStore, job: Job, tasks: Sequence[dict[str, Any]]) -> set[str]:
    """The settle keys of ``tasks`` that the job's store has settled."""
    return jobs.settled_keys(job.job_id, [task_key(task_id(t)) for t in tasks])


def task_id(task: dict[str, Any]) -> str:
    """The id a recorded task signature is sent with."""
    return str(task["options"]["task_id"])
