"""Celery signal hooks for traces: every task run is a span, a child of the context its
message carried.

- ``before_task_publish``: a message sent inside a span carries its context
  (``traceparent``), unless it carries one already: a job step's tasks are given their
  step's context when the fan-out is recorded (scheduler/job_traces.py), which a
  re-drive sends again as it was;
- ``task_prerun``: the run's span starts, current for the task's code (its LLM calls,
  embedding batches and engine writes), with the message's context as its parent; a
  step's chord callback first writes the span of the step it ends;
- ``task_postrun`` / ``task_failure`` / ``task_retry``: the run's outcome, and its end.

Written here rather than taken from opentelemetry-instrumentation-celery: that package
starts a task with no context in its message as a new trace's root, which would cut an
eager run (no broker: a task run inline, inside the submitting request's span) from its
trace; and a job's steps need spans of their own, whose ids their messages carry.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from celery import signals

from hopindex.core.tracing import flush_spans, set_error, spans
from hopindex.core.tracing.propagation import (
    JOB_SPAN_HEADER,
    STEP_HEADER,
    STEP_STARTED_HEADER,
    TRACEPARENT,
    current_carrier,
    end_step_span,
)
from hopindex.core.tracing.provider import tracer
from hopindex.monitoring.tasks import PHASE_TASK_PREFIX, job_context, stage_of
from hopindex.scheduler.task_names import QUERY_TASK

TASK_NAME = "celery.task_name"  # the names the Celery instrumentation uses
TASK_ID = "messaging.message.id"
RETRIES = "hopindex.task.retries"
OUTCOME = "hopindex.task.outcome"
BATCH_TASKS = frozenset({"hopindex.embed", "hopindex.purge"})
QUERY_WORK = "hopindex.query.work"


@dataclass(slots=True)
class _TracedRun:
    span: Any
    token: Any  # what context.attach returned


class _TraceHooks:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connected = False
        self.runs: dict[str, _TracedRun] = {}


_hooks = _TraceHooks()


def install_trace_hooks() -> None:
    """Connect the hooks once per process; each does nothing while tracing is off."""
    with _hooks.lock:
        if _hooks.connected:
            return
        uid = "hopindex.monitoring.task_traces."
        signals.before_task_publish.connect(_on_publish, weak=False, dispatch_uid=uid + "publish")
        signals.task_prerun.connect(_on_prerun, weak=False, dispatch_uid=uid + "prerun")
        signals.task_postrun.connect(_on_postrun, weak=False, dispatch_uid=uid + "postrun")
        signals.task_failure.connect(_on_failure, weak=False, dispatch_uid=uid + "failure")
        signals.task_retry.connect(_on_retry, weak=False, dispatch_uid=uid + "retry")
        # A prefork pool's process leaves through os._exit, which runs no exit handler:
        # what its export thread still holds is sent here, or lost with it.
        signals.worker_process_shutdown.connect(_on_process_shutdown, weak=False,
                                                dispatch_uid=uid + "process_shutdown")
        _hooks.connected = True


def message_headers(request: Any) -> dict[str, Any]:
    """The custom headers of a task's message: on a worker Celery makes them attributes
    of the request; an eager run keeps them in ``request.headers``."""
    found = dict(getattr(request, "headers", None) or {})
    for key in (TRACEPARENT, "tracestate", STEP_HEADER, STEP_STARTED_HEADER,
                JOB_SPAN_HEADER):
        value = getattr(request, key, None)
        if value is not None and key not in found:
            found[key] = value
    return found


def _on_publish(*, headers: dict[str, Any] | None = None, **_: Any) -> None:
    if tracer() is None or headers is None or headers.get(TRACEPARENT):
        return
    headers.update(current_carrier())


def _on_prerun(*, task_id: str | None = None, task: Any = None,
               args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None,
               **_: Any) -> None:
    active = tracer()
    if active is None or task is None or task_id is None:
        return
    from opentelemetry import context, propagate, trace
    from opentelemetry.trace import SpanKind

    headers = message_headers(task.request)
    stage = stage_of(task.name, tuple(args or ()))
    job = job_context(task, tuple(args or ()), dict(kwargs or {}))
    attributes: dict[str, Any] = {TASK_NAME: task.name, TASK_ID: task_id, spans.STAGE: stage,
                                  RETRIES: int(getattr(task.request, "retries", 0) or 0)}
    if "job_id" in job:
        attributes[spans.JOB_ID] = job["job_id"]
    if "index" in job:
        attributes[spans.INDEX] = job["index"]
    if task.name.startswith(PHASE_TASK_PREFIX) or task.name in BATCH_TASKS:
        # A batch task's last argument is its batch (documents, keys, units).
        batch = next((a for a in reversed(tuple(args or ())) if isinstance(a, list)), None)
        if batch is not None:
            attributes[spans.ITEMS] = len(batch)
    work = (kwargs or {}).get("name") or (args[0] if args else None)
    if task.name == QUERY_TASK and isinstance(work, str):
        # Which query method's work (the bridgerag judge): the task is shared by all.
        attributes[QUERY_WORK] = work
    if headers.get(STEP_HEADER):
        end_step_span(headers, {k: v for k, v in attributes.items()
                                if k in (spans.JOB_ID, spans.INDEX)})
    # A message's context, else (an eager run) the span current where it was sent.
    parent = (propagate.extract({k: str(v) for k, v in headers.items()})
              if headers.get(TRACEPARENT) else None)
    run_span = active.start_span(f"task {stage}", context=parent, kind=SpanKind.CONSUMER,
                                 attributes=attributes)
    token = context.attach(trace.set_span_in_context(run_span))
    _hooks.runs[task_id] = _TracedRun(run_span, token)


def _on_postrun(*, task_id: str | None = None, state: str | None = None, **_: Any) -> None:
    run = _hooks.runs.pop(task_id or "", None)
    if run is None:
        return
    from opentelemetry import context

    run.span.set_attribute(OUTCOME, state or "FAILURE")
    run.span.end()
    context.detach(run.token)


def _on_failure(*, task_id: str | None = None, exception: BaseException | None = None,
                **_: Any) -> None:
    run = _hooks.runs.get(task_id or "")
    if run is None or exception is None:
        return
    run.span.record_exception(exception)
    set_error(run.span, type(exception).__name__)


def _on_process_shutdown(**_: Any) -> None:
    flush_spans()


def _on_retry(*, request: Any = None, reason: object = None, **_: Any) -> None:
    run = _hooks.runs.get(str(getattr(request, "id", "") or ""))
    if run is None:
        return
    error = type(reason).__name__ if isinstance(reason, BaseException) else "Retry"
    run.span.add_event("retry", {"error.type": error})
