"""Waiting for a job: polling its record until it ends (or pauses), for the service,
both clients and the CLI's progress display alike. Kept apart from the display, so
waiting loads no terminal library."""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from typing import Protocol

from hopindex.core.errors import NotFoundError
from hopindex.core.models import Job, JobState

POLL_S = 0.2


class JobReader(Protocol):
    """What following a job reads: a job store, or a client's ``jobs`` (whose
    ``get_job`` raises ``NotFoundError`` for an unknown id where a store answers None)."""

    def get_job(self, job_id: str, /) -> Job | None: ...

    def list_jobs(self, index: str | None = ..., limit: int = ..., /) -> list[Job]: ...


class WaitUntil(enum.StrEnum):
    """How far a wait for a job goes."""

    # Succeeded, failed or cancelled.
    FINAL = "final"
    # Final, or paused on its LLM budget: nothing more happens until a resume, so a
    # follower that does not run the job itself stops there. A job waiting on the
    # provider's batches is not settled: it goes on by itself once they are in.
    SETTLED = "settled"

    def reached(self, job: Job) -> bool:
        return job.state.is_final or (self is WaitUntil.SETTLED
                                      and job.state is JobState.PAUSED)


def wait_for_job(jobs: JobReader, job_id: str, *, timeout_s: float | None = None,
                 on_update: Callable[[Job], None] | None = None,
                 until: WaitUntil = WaitUntil.FINAL, poll_s: float = POLL_S) -> Job:
    """Poll a job record until it is as far as ``until`` (its tasks run on workers) or
    ``timeout_s`` passed; every ``poll_s`` (a server's client polls less often than a
    reader of the store beside it)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        job = jobs.get_job(job_id)
        if job is None:
            raise NotFoundError(f"no job {job_id!r}")
        if on_update is not None:
            on_update(job)
        if until.reached(job) or (deadline is not None and time.monotonic() > deadline):
            return job
        time.sleep(poll_s)
