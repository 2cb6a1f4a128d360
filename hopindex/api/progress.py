"""A terminal progress bar that follows a job record while its tasks run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from hopindex.backends.protocols import JobStore
from hopindex.core.errors import NotFoundError
from hopindex.core.models import Job, Stage

# Validation is done before the job starts; finalize is one step. The rest (each
# phase of the index's method, and embedding) get a bar as the job meets them.
_HIDDEN = (Stage.VALIDATE.value, Stage.FINALIZE.value)
POLL_S = 0.2


def _bars(console: Console) -> Progress:
    return Progress(TextColumn("{task.description:<18}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=True)


def _stage_updater(progress: Progress) -> Callable[[Job], None]:
    """One bar per step the job has met; the returned function moves them to a job's
    counts."""
    bars: dict[str, TaskID] = {}

    def update(job: Job) -> None:
        for stage, counts in job.counts.items():
            if stage in _HIDDEN:
                continue
            if stage not in bars:
                bars[stage] = progress.add_task(stage, total=None)
            progress.update(bars[stage], total=counts.total or None,
                            completed=counts.done + counts.failed + counts.skipped)

    return update


def wait_for_job(jobs: JobStore, job_id: str, *, timeout_s: float | None = None,
                 on_update: Callable[[Job], None] | None = None) -> Job:
    """Poll a job record until its state is final (its tasks run on workers)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        job = jobs.get_job(job_id)
        if job is None:
            raise NotFoundError(f"no job {job_id!r}")
        if on_update is not None:
            on_update(job)
        if job.state.is_final or (deadline is not None and time.monotonic() > deadline):
            return job
        time.sleep(POLL_S)


def follow_job(jobs: JobStore, job_id: str, console: Console, enabled: bool = True) -> Job:
    """Wait for the job to finish, showing its progress per stage unless disabled."""
    if not enabled:
        return wait_for_job(jobs, job_id)
    with _bars(console) as progress:
        update = _stage_updater(progress)
        return wait_for_job(jobs, job_id, on_update=update)


@contextmanager
def follow_newest_job(jobs: JobStore, index: str, console: Console,
                      enabled: bool = True) -> Iterator[None]:
    """Poll the index's newest job from a side thread; tasks may run in this process
    (eager) or on workers, the job record is the one truth either way."""
    if not enabled:
        yield
        return
    known = {j.job_id for j in jobs.list_jobs(index, limit=5)}
    stop = threading.Event()
    with _bars(console) as progress:
        update = _stage_updater(progress)
        thread = threading.Thread(target=_poll, args=(jobs, index, known, stop, update),
                                  daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


def _poll(jobs: JobStore, index: str, known: set[str], stop: threading.Event,
          update: Callable[[Job], None]) -> None:
    while not stop.wait(POLL_S):
        newest = [j for j in jobs.list_jobs(index, limit=1) if j.job_id not in known]
        if newest:
            update(newest[0])
