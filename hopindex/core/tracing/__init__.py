"""Traces (OpenTelemetry): off by default, configured by the standard ``OTEL_*``
variables (docs/tracing.md).

- ``settings.py``: what those variables ask, read once;
- ``provider.py``: this process's tracer and exporter;
- ``spans.py``: opening a span, the current ids;
- ``propagation.py``: context in message headers and on a job's record;
- ``span_ids.py``: ids chosen before their span is written (a job's, a step's);
- ``genai.py``: an LLM request's span and its ``gen_ai.*`` attributes.
"""

from hopindex.core.tracing.provider import (
    configure_tracing,
    flush_spans,
    stop_tracing,
    tracing_enabled,
    use_span_processor,
)
from hopindex.core.tracing.settings import TracesExporter, TracingSettings
from hopindex.core.tracing.spans import (
    NO_SPAN,
    SpanLike,
    current_ids,
    current_trace_id,
    set_error,
    span,
)

__all__ = [
    "NO_SPAN",
    "SpanLike",
    "TracesExporter",
    "TracingSettings",
    "configure_tracing",
    "current_ids",
    "current_trace_id",
    "flush_spans",
    "set_error",
    "span",
    "stop_tracing",
    "tracing_enabled",
    "use_span_processor",
]
