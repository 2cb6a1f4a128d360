"""The base class of every hopindex task: retries follow the error's type, a task
that fails for good fails its job visibly instead of hanging its chord, and a task
of a paused job leaves its work for the resume (scheduler/pause.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import Task
from celery.exceptions import Ignore, Reject

from hopindex.backends.llm.batch_scope import BatchPendingError
from hopindex.core.errors import BudgetExhaustedError, HopindexError, JobPausedError
from hopindex.core.logging import get_logger
from hopindex.scheduler.lifecycle import fail_job
from hopindex.scheduler.pause import note_paused_task, pause_job, wait_for_resume
from hopindex.scheduler.provider_batches import wait_for_batches
from hopindex.scheduler.runtime import Runtime

log = get_logger(__name__)

# Where a failing task finds the process's runtime: set by hopindex/workers/runtime.py,
# which imports the app (and so this module) and cannot be imported from here.
_runtime_source: Callable[[], Runtime] | None = None


def set_runtime_source(source: Callable[[], Runtime]) -> None:
    global _runtime_source  # noqa: PLW0603  # one runtime per process
    _runtime_source = source


def process_runtime() -> Runtime:
    """This process's runtime (``hopindex.workers.runtime.current_runtime``)."""
    if _runtime_source is None:
        raise RuntimeError("no runtime source installed: import hopindex.workers.runtime")
    return _runtime_source()

BACKOFF_BASE_S = 2.0
BACKOFF_MAX_S = 300.0


class HopindexTask(Task):  # type: ignore[misc]  # celery is untyped
    """Retries ``HopindexError``s whose type says ``retryable`` with exponential backoff
    (or the ``retry_after_s`` they carry), up to ``HOPINDEX_TASK_MAX_RETRIES``."""

    # False for tasks outside any job (webhook deliveries, the reaper).
    job_bound: bool = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        while True:
            try:
                return self._call_with_retries(*args, **kwargs)
            except JobPausedError as paused:
                if not self._run_again_after(paused):
                    raise Ignore() from paused

    def _run_again_after(self, paused: JobPausedError) -> bool:
        """Whether to run the task again now that its job paused: in the process that
        runs the job itself once it is resumed (waiting here until then); on workers
        only when a resume came in meanwhile, else the task is noted on the job for
        the resume to send again and ends unreported (its chord stays open)."""
        runtime = process_runtime()
        if isinstance(paused, BatchPendingError):
            return self._run_again_after_batches(runtime, paused)
        if isinstance(paused, BudgetExhaustedError):
            pause_job(runtime, paused.job_id, str(paused), paused.figures)
        if self.request.is_eager:
            job = wait_for_resume(runtime, paused.job_id)
            log.info("task_resumed", task=self.name, job_id=paused.job_id,
                     state=job.state.value if job else None)
            return True
        if note_paused_task(runtime, paused.job_id, str(self.request.id)):
            log.info("task_paused", task=self.name, task_id=self.request.id,
                     job_id=paused.job_id)
            return False
        return True

    def _run_again_after_batches(self, runtime: Runtime, pending: BatchPendingError) -> bool:
        """Its calls wait for a provider batch, which its run recorded it on: on workers
        it ends unreported and the poller sends it again when the results are in; the
        process that runs its job itself follows the batches here and runs it again."""
        if self.request.is_eager:
            wait_for_batches(runtime, pending.job_id)
            return True
        log.info("task_waiting_on_provider", task=self.name, task_id=self.request.id,
                 job_id=pending.job_id, lines=len(pending.lines))
        return False

    def _call_with_retries(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except JobPausedError:
            raise
        except HopindexError as exc:
            # Eager runs have no queue to wait in; the LLM client has retried already.
            if not exc.retryable or self.request.is_eager:
                raise
            max_retries = int(self.app.conf.get("hopindex_max_retries", 5))
            if self.request.retries >= max_retries:
                raise
            countdown = getattr(exc, "retry_after_s", None) or min(
                BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** self.request.retries)
            log.warning("task_retrying", task=self.name, attempt=self.request.retries + 1,
                        countdown_s=countdown, error=str(exc))
            try:
                raise self.retry(exc=exc, countdown=countdown, max_retries=max_retries) from exc
            except Reject as rejected:
                # The retry could not be published (the broker stayed away past the
                # publish retry policy), and Celery would drop this message. Requeued
                # instead, it runs again at once, or — the broker still away, the
                # reject unsent — comes back after the visibility timeout.
                log.warning("task_retry_not_published", task=self.name, error=str(exc),
                            publish_error=str(rejected.reason))
                raise Reject(rejected.reason, requeue=True) from exc

    def on_failure(self, exc: BaseException, task_id: str, args: tuple[Any, ...],
                   kwargs: dict[str, Any], einfo: Any) -> None:
        job_id = self._job_id(args, kwargs)
        log.error("task_failed", task=self.name, task_id=task_id, job_id=job_id,
                  error=f"{type(exc).__name__}: {exc}")
        if job_id is None or _runtime_source is None:
            return
        try:
            fail_job(_runtime_source(), job_id,
                     f"task {self.name} failed: {type(exc).__name__}: {exc}")
        except Exception as failure:  # reporting must not mask the task's own error
            log.error("job_fail_not_recorded", job_id=job_id, error=str(failure))

    def _job_id(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        """Every job task takes the job id as its first string argument (a chord
        callback gets the header's results, a list, before it)."""
        if not self.job_bound:
            return None
        if "job_id" in kwargs:
            return str(kwargs["job_id"])
        return next((a for a in args if isinstance(a, str)), None)
