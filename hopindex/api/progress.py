"""A terminal progress bar that follows a job record while its tasks run (and, in batch
mode, while its requests wait at the provider), and what a follower does when the job
pauses on its LLM budget."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from hopindex.api.job_waiting import POLL_S, JobReader, WaitUntil, wait_for_job
from hopindex.api.render_batches import lines_done
from hopindex.core.models import Job, JobState, Stage

# Validation is done before the job starts; finalize is one step. The rest (each
# phase of the index's method, and embedding) get a bar as the job meets them.
_HIDDEN = (Stage.VALIDATE.value, Stage.FINALIZE.value)
# The bar of a job's lines at the provider's Batch API, once it sent a batch: a job
# waiting on the provider moves no phase bar for hours, and this one says why.
PROVIDER_BAR = "provider batches"


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
        if job.provider_batches:
            if PROVIDER_BAR not in bars:
                bars[PROVIDER_BAR] = progress.add_task(PROVIDER_BAR, total=None)
            done, total, _ = lines_done(job.provider_batches)
            progress.update(bars[PROVIDER_BAR], total=total or None, completed=done)

    return update


def follow_job(jobs: JobReader, job_id: str, console: Console, enabled: bool = True,
               until: WaitUntil = WaitUntil.SETTLED) -> Job:
    """Wait for the job to settle (by default: end, or pause on its budget), showing
    its progress per stage unless disabled."""
    if not enabled:
        return wait_for_job(jobs, job_id, until=until)
    with _bars(console) as progress:
        update = _stage_updater(progress)
        return wait_for_job(jobs, job_id, on_update=update, until=until)


class PauseWatch:
    """Calls ``on_pause`` once per pause of the jobs it is shown, and ``on_resume`` once
    such a job goes on (resumed, or ended while paused)."""

    def __init__(self, on_pause: Callable[[Job], None],
                 on_resume: Callable[[Job], None] | None = None) -> None:
        self._on_pause = on_pause
        self._on_resume = on_resume
        self._noted: dict[str, float | None] = {}

    def __call__(self, job: Job) -> None:
        if job.state is JobState.PAUSED:
            if job.job_id not in self._noted or self._noted[job.job_id] != job.paused_at:
                self._noted[job.job_id] = job.paused_at
                self._on_pause(job)
        elif job.job_id in self._noted:
            del self._noted[job.job_id]
            if self._on_resume is not None:
                self._on_resume(job)


@contextmanager
def follow_newest_job(jobs: JobReader, index: str, console: Console, enabled: bool = True,
                      watch: Callable[[Job], None] | None = None) -> Iterator[None]:
    """Poll the index's newest job from a side thread; tasks may run in this process
    (eager) or on workers, the job record is the one truth either way. ``enabled``
    shows progress bars; ``watch`` (a ``PauseWatch``, say) sees every poll of the job
    even without them."""
    if not enabled and watch is None:
        yield
        return
    known = {j.job_id for j in jobs.list_jobs(index, 5)}
    stop = threading.Event()
    with _bars(console) if enabled else nullcontext() as progress:
        show = _stage_updater(progress) if progress is not None else None

        def update(job: Job) -> None:
            if show is not None:
                show(job)
            if watch is not None:
                watch(job)

        thread = threading.Thread(target=_poll, args=(jobs, index, known, stop, update),
                                  daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


def _poll(jobs: JobReader, index: str, known: set[str], stop: threading.Event,
          update: Callable[[Job], None]) -> None:
    while not stop.wait(POLL_S):
        newest = [j for j in jobs.list_jobs(index, 1) if j.job_id not in known]
        if newest:
            update(newest[0])
