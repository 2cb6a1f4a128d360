"""A job's trace (core/tracing/propagation.py) as the scheduler keeps it: begun at
submit, its steps' context put on their tasks, its span written when it ends.

Everything here does nothing while tracing is off or the job has no trace (submitted
while it was off): the job record's ``trace`` stays empty. Nor does a trace ever cost a
job anything: a span that cannot be written is logged and left out.
"""

from __future__ import annotations

from celery.canvas import Signature

from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobKind, JobState
from hopindex.core.tracing import spans, tracing_enabled
from hopindex.core.tracing.propagation import begin_job_trace, end_job_span, step_headers
from hopindex.scheduler.runtime import Runtime

log = get_logger(__name__)


def begin_trace(kind: JobKind) -> dict[str, str]:
    """A new job's trace record (empty while tracing is off, or when it cannot be had)."""
    try:
        return begin_job_trace(kind.value)
    except Exception as exc:
        log.warning("job_trace_not_begun", error=f"{type(exc).__name__}: {exc}")
        return {}


def trace_step(runtime: Runtime, job_id: str, step: str, header: list[Signature],
               callback: Signature) -> None:
    """Put step ``step``'s span context on its tasks' and callback's message headers,
    before the fan-out is recorded: a task the reaper, a resume or a provider batch's
    end sends again from that record joins the same trace."""
    if not tracing_enabled():
        return
    job = runtime.backends.state.get_job(job_id)
    if job is None or not job.trace:
        return
    try:
        tasks = step_headers(job.trace, job_id, step, callback=False)
        ending = step_headers(job.trace, job_id, step, callback=True)
    except Exception as exc:
        log.warning("step_trace_not_set", job_id=job_id, step=step,
                    error=f"{type(exc).__name__}: {exc}")
        return
    for task in header:
        _add_headers(task, tasks)
    _add_headers(callback, ending)


def end_trace(job: Job) -> None:
    """Write the span of a job that has just ended (succeeded, failed or cancelled)."""
    if not job.trace or not tracing_enabled():
        return
    failed = job.state in (JobState.FAILED, JobState.CANCELLED)
    try:
        _write_job_span(job, failed=failed)
    except Exception as exc:
        log.warning("job_span_not_written", job_id=job.job_id,
                    error=f"{type(exc).__name__}: {exc}")


def _write_job_span(job: Job, *, failed: bool) -> None:
    end_job_span(job.trace, f"{job.kind.value} job", {
        spans.JOB_ID: job.job_id, spans.INDEX: job.index,
        "hopindex.job.state": job.state.value,
        "hopindex.job.failed_items": len({e.item for e in job.errors}),
        "hopindex.job.units_embedded": job.units_embedded,
        "hopindex.job.redrives": len(job.redrives),
        "hopindex.llm.calls": job.llm_total.calls,
        "hopindex.llm.cost": job.llm_total.cost,
    }, error=job.state.value if failed else None)


def _add_headers(signature: Signature, headers: dict[str, str]) -> None:
    if headers:
        signature.options["headers"] = {**signature.options.get("headers", {}), **headers}
