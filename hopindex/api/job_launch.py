"""Starting ingest and delete jobs, answering as soon as their job record exists (the
HTTP API's routes and the MCP server's tools).

With workers (a broker) submitting only enqueues: the call returns the job at
once. Embedded (no broker) the whole job runs inside the submitting call, so it
runs on a background thread here, under a job id chosen here, and the request
answers with that job as soon as its record exists, while the job goes on. One
embedded job runs at a time: the pipeline is CPU-bound on this process's cores
and a second job would only compete for them; a request that finds the slot
taken is refused (``JobSlotBusyError``: a 429 with ``Retry-After`` over HTTP).

A submission that fails once its job record exists answers with that job, which
reads ``failed`` with the reason: the same answer whether the failure came before
or after the request was answered (embedded, the job goes on after it). One that
fails before (an unknown method, a store that cannot be reached) answers the error.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor

from hopindex.api.blocking import BlockingRunner
from hopindex.api.client.local import LocalClient
from hopindex.api.error_view import plain_traceback
from hopindex.core.errors import HopindexError, JobSlotBusyError
from hopindex.core.ids import job_id as new_job_id
from hopindex.core.logging import get_logger
from hopindex.core.models import Job
from hopindex.scheduler.recovery import shutdown_reason

log = get_logger(__name__)

POLL_S = 0.01
BUSY_RETRY_AFTER_S = 5
# How long a submission waits for the thread of a job whose record already reads final
# to return: it only closes its scope and logs, so this bounds a bug, not normal waits.
ENDING_JOB_WAIT_S = 30.0


class JobLauncher:
    def __init__(self, client: LocalClient, blocking: BlockingRunner) -> None:
        self._client = client
        self._blocking = blocking
        self._pool: ThreadPoolExecutor | None = None
        # Held from the moment a request claims the embedded slot until its job ends;
        # a threading lock because the job's own thread releases it.
        self._slot = threading.Lock()
        self._running: Future[Job] | None = None
        self._running_job: str | None = None

    @property
    def eager(self) -> bool:
        return self._client.runs_jobs_here

    async def launch(self, submit: Callable[[str], Job]) -> Job:
        """Run ``submit`` (a client call that starts a job without waiting for it, given
        the job id to use) and return its job, which may still be running."""
        job_id = new_job_id()
        if not self.eager:
            try:
                return await self._blocking.run(submit, job_id)
            except Exception as exc:
                return await self._job_or_raise(job_id, exc)
        await self._claim_slot()
        self._running_job = job_id
        try:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hopindex-job")
            future = self._pool.submit(contextvars.copy_context().run, submit, job_id)
        except BaseException:
            self._slot.release()
            raise
        self._running = future
        future.add_done_callback(self._finished)
        find_job = self._client.jobs.find_job
        waiting = asyncio.wrap_future(future)
        # Once the request has answered, the outcome is logged by _finished instead.
        waiting.add_done_callback(lambda f: f.cancelled() or f.exception())
        while True:
            done, _ = await asyncio.wait({waiting}, timeout=POLL_S)
            if done:
                failure = waiting.exception()
                return waiting.result() if failure is None else (
                    await self._job_or_raise(job_id, failure))
            job = await self._blocking.run(find_job, job_id)
            if job is not None:
                return job

    async def _claim_slot(self) -> None:
        """Take the embedded slot, or refuse (``JobSlotBusyError``) while a job holds it.

        A job's record reads final a moment before its thread returns and lets the
        slot go (the submission's own last steps): a client that saw the job end and
        sends the next one waits for that moment instead of being told to retry."""
        if self._slot.acquire(blocking=False):
            return
        ahead = self._running_job
        job = (await self._blocking.run(self._client.jobs.find_job, ahead)
               if ahead is not None else None)
        if job is not None and job.state.is_final and await self._blocking.run(
                self._slot.acquire, True, ENDING_JOB_WAIT_S):
            return
        raise JobSlotBusyError(f"an ingest or delete job is running in this server ({ahead}); "
                               "without workers one runs at a time. Retry later, or run "
                               "workers (HOPINDEX_BROKER_URL)", retry_after_s=BUSY_RETRY_AFTER_S)

    async def _job_or_raise(self, job_id: str, failure: BaseException) -> Job:
        """The failed submission's job; its error when it failed before the job existed."""
        job = await self._blocking.run(self._client.jobs.find_job, job_id)
        if job is None:
            raise failure
        log.warning("job_failed_at_submission", job_id=job_id, state=job.state.value,
                    error=f"{type(failure).__name__}: {failure}")
        return job

    def _finished(self, future: Future[Job]) -> None:
        self._slot.release()
        _log_outcome(future)

    def cancel_running(self) -> None:
        """Cancel the embedded job running now, if any, its record saying the server shut
        down (not a request); its thread stops at its next step."""
        running, job_id = self._running, self._running_job
        if running is None or running.done() or job_id is None:
            return
        try:
            jobs = self._client.jobs
            jobs.cancel_job(job_id, reason=shutdown_reason(jobs.get_job(job_id).kind))
        except HopindexError as exc:
            log.warning("job_not_cancelled_at_shutdown", job_id=job_id, error=str(exc))

    def wait_idle(self, timeout_s: float) -> bool:
        """Whether no job thread runs here, waiting up to ``timeout_s`` for one to end."""
        running = self._running
        if running is None:
            return True
        with contextlib.suppress(TimeoutError, CancelledError):
            running.exception(timeout=timeout_s)
        return running.done()

    def close(self) -> None:
        """Cancel a running embedded job (``cancel_running``) and wait for its thread."""
        try:
            self.cancel_running()
        finally:
            # Whatever the cancel did, the job's thread is waited for: a server must not
            # exit under a job that is still writing.
            if self._pool is not None:
                self._pool.shutdown(wait=True)


def _log_outcome(future: Future[Job]) -> None:
    exc = future.exception()
    if exc is None:
        job = future.result()
        log.info("job_finished", job_id=job.job_id, index=job.index, state=job.state.value)
    elif isinstance(exc, HopindexError):
        # The job record already says why (the submission marks it failed).
        log.warning("job_failed", error_type=type(exc).__name__, error=str(exc))
    else:
        log.error("job_crashed", error_type=type(exc).__name__, error=str(exc),
                  traceback=plain_traceback(exc))
