"""Spans for hopindex's code: one helper to open one, and what a log line or a record
reads of the current one.

Every helper returns at its first line while tracing is off (no SDK, no API call), so
the traced code costs a function call and a ``with`` there.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from hopindex.core.tracing.provider import tracer


class SpanLike(Protocol):
    """What hopindex's code does with a span: the SDK's, or ``NO_SPAN`` when off."""

    def set_attribute(self, key: str, value: Any) -> None: ...

    def add_event(self, name: str, attributes: Any = None,
                  timestamp: int | None = None) -> None: ...

    def record_exception(self, exception: BaseException, attributes: Any = None,
                         timestamp: int | None = None, escaped: bool = False) -> None: ...

    def is_recording(self) -> bool: ...


class _NoSpan:
    """The span while tracing is off: records nothing."""

    def set_attribute(self, key: str, value: Any) -> None:
        return None

    def add_event(self, name: str, attributes: Any = None,
                  timestamp: int | None = None) -> None:
        return None

    def record_exception(self, exception: BaseException, attributes: Any = None,
                         timestamp: int | None = None, escaped: bool = False) -> None:
        return None

    def is_recording(self) -> bool:
        return False


NO_SPAN: SpanLike = _NoSpan()
# Reusable and re-entrant: nullcontext keeps no state of its own.
_OFF: contextlib.AbstractContextManager[SpanLike] = contextlib.nullcontext(NO_SPAN)

# Attribute names of hopindex's own (the gen_ai.* ones are in genai.py).
JOB_ID = "hopindex.job_id"
INDEX = "hopindex.index"
METHOD = "hopindex.method"
STAGE = "hopindex.stage"
STEP = "hopindex.step"
ITEMS = "hopindex.items"


def span(name: str, attributes: Mapping[str, Any] | None = None
         ) -> contextlib.AbstractContextManager[SpanLike]:
    """A span around the ``with`` block, the current one inside it. An exception leaving
    the block is recorded on it and sets its status to error."""
    active = tracer()
    if active is None:
        return _OFF
    return active.start_as_current_span(name, attributes=without_nones(attributes))


def current_ids() -> tuple[str, str] | None:
    """The current span's trace id and span id, in hex, when one is being recorded."""
    if tracer() is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def current_trace_id() -> str | None:
    """The current trace's id when its spans are kept (sampled): the id a response or a
    record gives its reader to look up. An unsampled trace's id points at nothing."""
    if tracer() is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid or not context.trace_flags.sampled:
        return None
    return f"{context.trace_id:032x}"


def now_ns() -> int:
    return time.time_ns()


def set_error(span_: SpanLike, error_type: str) -> None:
    """``error.type`` on a span that ended in a handled failure (a retried 429, a
    refused reply): the semantic conventions' attribute, with the status set too."""
    if not span_.is_recording():
        return
    from opentelemetry.trace import Status, StatusCode

    span_.set_attribute("error.type", error_type)
    set_status = getattr(span_, "set_status", None)
    if set_status is not None:
        set_status(Status(StatusCode.ERROR, error_type))


def without_nones(attributes: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Attributes without the Nones (the SDK warns on each and drops it)."""
    if not attributes:
        return None
    return {k: v for k, v in attributes.items() if v is not None}


def server_span(method: str, route: str, path: str, headers: Mapping[str, str]
                ) -> contextlib.AbstractContextManager[SpanLike]:
    """An HTTP request's span (kind SERVER), a child of the caller's span when its
    ``traceparent`` header names one, named by the route's template (never the path:
    an index name or job id would make every name unique)."""
    active = tracer()
    if active is None:
        return _OFF
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind

    parent = propagate.extract({k.lower(): v for k, v in headers.items()
                                if k.lower() in ("traceparent", "tracestate")})
    return active.start_as_current_span(
        f"{method} {route}", context=parent, kind=SpanKind.SERVER,
        attributes={"http.request.method": method, "http.route": route, "url.path": path})


@contextlib.contextmanager
def command_span(name: str) -> Iterator[SpanLike]:
    """A command's root span (``hopindex query``...): its exit code an attribute, an
    error only when it is not 0 (commands end through ``sys.exit``, which a plain span
    would record as an exception whatever the code)."""
    active = tracer()
    if active is None:
        yield NO_SPAN
        return
    with active.start_as_current_span(name, record_exception=False,
                                      set_status_on_exception=False) as root:
        try:
            yield root
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            root.set_attribute("process.exit.code", code)
            if code:
                set_error(root, f"exit {code}")
            raise
        except BaseException as exc:
            root.record_exception(exc)
            set_error(root, type(exc).__name__)
            raise


def trace_exemplar() -> dict[str, str] | None:
    """A Prometheus exemplar naming the current trace (None: off, or not sampled), so a
    histogram's slow bucket links to a trace that fell in it (OpenMetrics exposition)."""
    if tracer() is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid or not context.trace_flags.sampled:
        return None
    return {"trace_id": f"{context.trace_id:032x}"}
