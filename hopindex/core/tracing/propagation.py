"""Trace context across processes: W3C ``traceparent`` headers, and a job's trace.

A job's trace outlives any process: it starts where the job is submitted, its tasks
run on workers (re-driven by the reaper, resumed after a pause, sent again when a
provider batch ends), and it ends at ``index.ready``. So its context is kept on the
job record (``Job.trace``): the job span's ids, its parent (the request or command
that submitted it) and its start. Each step's tasks carry the step span's context in
their message headers, recorded with the fan-out, so whatever sends them again sends
the same context and they join the same trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hopindex.core.tracing.provider import tracer
from hopindex.core.tracing.spans import STEP, now_ns, without_nones

TRACEPARENT = "traceparent"
# Headers a step's chord callback carries besides its traceparent: the step it ends,
# when the step began and the job span that is the step span's parent.
STEP_HEADER = "hopindex_step"
STEP_STARTED_HEADER = "hopindex_step_started_ns"
JOB_SPAN_HEADER = "hopindex_job_span"
SAMPLED = 0x01


def traceparent(trace_id: int, span_id: int, flags: int) -> str:
    return f"00-{trace_id:032x}-{span_id:016x}-{flags:02x}"


def parse_traceparent(value: str | None) -> tuple[int, int, int] | None:
    """(trace id, span id, flags) of a W3C traceparent, None when it is not one."""
    if not value:
        return None
    parts = value.strip().split("-")
    if len(parts) < 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except ValueError:
        return None
    if not trace_id or not span_id:
        return None
    return trace_id, span_id, flags


def current_carrier() -> dict[str, str]:
    """The current context as headers (empty while tracing is off or outside a span)."""
    if tracer() is None:
        return {}
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def begin_job_trace(kind: str) -> dict[str, str]:
    """A new job's trace record: its span's ids, chosen now (the span is written when the
    job ends, ``end_job_span``), as a child of the current span (the request or command
    submitting it), or the root of a trace of its own. Empty while tracing is off."""
    active = tracer()
    if active is None:
        return {}
    from opentelemetry import trace

    parent = trace.get_current_span().get_span_context()
    # Started only to draw its ids and the sampler's decision; never ended, so never
    # exported: end_job_span writes the job span with these ids.
    draft = active.start_span(f"{kind} job")
    context = draft.get_span_context()
    return {TRACEPARENT: traceparent(context.trace_id, context.span_id,
                                     int(context.trace_flags)),
            "parent": f"{parent.span_id:016x}" if parent.is_valid else "",
            "started_ns": str(now_ns())}


def step_headers(trace: Mapping[str, str], job_id: str, step: str, *,
                 callback: bool) -> dict[str, str]:
    """The message headers of a step's tasks: its span's context (a child of the job's
    span); the chord callback, which ends the step, also what writing its span needs."""
    parsed = parse_traceparent(trace.get(TRACEPARENT))
    if parsed is None or tracer() is None:
        return {}
    from hopindex.core.tracing.span_ids import step_span_id

    trace_id, job_span, flags = parsed
    headers = {TRACEPARENT: traceparent(trace_id, step_span_id(trace_id, job_id, step), flags)}
    if callback:
        headers |= {STEP_HEADER: step, STEP_STARTED_HEADER: str(now_ns()),
                    JOB_SPAN_HEADER: f"{job_span:016x}"}
    return headers


def end_step_span(headers: Mapping[str, Any], attributes: Mapping[str, Any]) -> None:
    """Write the span of the step a chord callback's ``headers`` end (nothing when they
    name none): from when it was sent until now."""
    step = headers.get(STEP_HEADER)
    parsed = parse_traceparent(headers.get(TRACEPARENT))
    job_span = str(headers.get(JOB_SPAN_HEADER) or "")
    if not step or parsed is None or not job_span:
        return
    trace_id, span_id, flags = parsed
    _write_span(f"step {step}", trace_id=trace_id, span_id=span_id,
                parent=(int(job_span, 16), flags),
                started_ns=int(str(headers.get(STEP_STARTED_HEADER) or now_ns())),
                attributes={**attributes, STEP: str(step)})


def end_job_span(trace: Mapping[str, str], name: str, attributes: Mapping[str, Any],
                 *, error: str | None = None) -> None:
    """Write a job's span, from its submission until now (its end)."""
    parsed = parse_traceparent(trace.get(TRACEPARENT))
    if parsed is None:
        return
    trace_id, span_id, flags = parsed
    parent = trace.get("parent") or ""
    _write_span(name, trace_id=trace_id, span_id=span_id,
                parent=(int(parent, 16), flags) if parent else None,
                started_ns=int(trace.get("started_ns") or now_ns()),
                attributes=attributes, error=error)


def _write_span(name: str, *, trace_id: int, span_id: int, parent: tuple[int, int] | None,
                started_ns: int, attributes: Mapping[str, Any],
                error: str | None = None) -> None:
    active = tracer()
    if active is None:
        return
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode

    from hopindex.core.tracing.span_ids import preset_ids

    # A root when it has no parent: never the span current where it is written (the
    # task that ends the work).
    context = Context()
    if parent is not None:
        context = trace.set_span_in_context(NonRecordingSpan(SpanContext(
            trace_id=trace_id, span_id=parent[0], is_remote=True,
            trace_flags=trace.TraceFlags(parent[1]))))
    with preset_ids(trace_id, span_id):
        written = active.start_span(name, context=context, start_time=started_ns,
                                    attributes=without_nones(attributes))
    if error:
        written.set_attribute("error.type", error)
        written.set_status(Status(StatusCode.ERROR, error))
    written.end()
