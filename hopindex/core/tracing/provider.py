"""This process's tracer: none (tracing off, the default) or the SDK's, exporting in
batches from a background thread.

``configure_tracing`` runs once per process from ``configure_logging`` (every command,
``serve``, each worker and beat set up their logging first). With tracing off nothing
of the SDK is imported and each span helper returns at its first line. With it on,
spans go through a ``BatchSpanProcessor``: a bounded queue that drops when full and a
thread that exports, so a slow or dead collector never holds up the code being traced.
A forked pool process gets a fresh export thread (the SDK re-creates it after a fork).
"""

from __future__ import annotations

import atexit
import contextlib
import sys
import threading
from typing import TYPE_CHECKING

from hopindex.core.tracing.settings import SamplerName, TracesExporter, TracingSettings

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.sampling import Sampler
    from opentelemetry.trace import Tracer

INSTRUMENTATION_NAME = "hopindex"


class _TracingState:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.configured = False
        self.enabled = False
        self.settings = TracingSettings()
        self.provider: TracerProvider | None = None
        self.tracer: Tracer | None = None


_state = _TracingState()


def configure_tracing(settings: TracingSettings | None = None) -> bool:
    """Set this process's tracer up from ``settings`` (else the ``OTEL_*`` variables);
    True when tracing is on. Once per process: later calls change nothing, so every
    service a process opens shares one exporter."""
    with _state.lock:
        if _state.configured:
            return _state.enabled
        chosen = settings if settings is not None else TracingSettings.from_env()
        _state.configured = True
        _state.settings = chosen
        if not chosen.enabled:
            return False
        _install(chosen, _exporting_processor(chosen))
        atexit.register(_flush_at_exit)
        return True


def use_span_processor(processor: SpanProcessor,
                       settings: TracingSettings | None = None) -> TracerProvider:
    """Trace this process into ``processor`` from now on, whatever was configured: for
    tests (the SDK's in-memory exporter) and tools that collect their own spans."""
    with _state.lock:
        chosen = settings or TracingSettings(exporter=TracesExporter.CONSOLE)
        _state.configured = True
        _state.settings = chosen
        return _install(chosen, processor)


def stop_tracing() -> None:
    """Tracing off again (tests); what the processor holds is flushed first."""
    flush_spans()
    with _state.lock:
        _state.enabled, _state.provider, _state.tracer = False, None, None
        _state.configured = False


def tracing_enabled() -> bool:
    return _state.enabled


def tracer() -> Tracer | None:
    """This process's tracer, None while tracing is off."""
    return _state.tracer


def flush_spans(timeout_s: float | None = None) -> bool:
    """Hand every ended span to the exporter, waiting at most ``timeout_s`` (default: the
    exit bound); False when the export had not finished by then.

    The SDK's force_flush exports in the calling thread, as long as the exporter's own
    timeout and retries take (over 10 s against a collector that never answers): it runs
    on a daemon thread here, so the wait is ours to bound."""
    provider = _state.provider
    if provider is None:
        return True
    wait_s = _state.settings.exit_flush_s if timeout_s is None else timeout_s
    done = threading.Event()

    def flush() -> None:
        with contextlib.suppress(Exception):  # an exporter failing changes nothing here
            provider.force_flush(int(wait_s * 1000))
        done.set()

    threading.Thread(target=flush, name="hopindex-span-flush", daemon=True).start()
    return done.wait(wait_s)


def _install(settings: TracingSettings, processor: SpanProcessor) -> TracerProvider:
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    from hopindex.core.tracing.span_ids import preset_id_generator

    # OTEL_RESOURCE_ATTRIBUTES is read by Resource.create; the service name is ours.
    resource = Resource.create({"service.name": settings.service_name})
    # Exit is ours (_flush_at_exit, bounded): the SDK's own waits up to 30 s.
    provider = TracerProvider(resource=resource, sampler=_sampler(settings),
                              id_generator=preset_id_generator(), shutdown_on_exit=False)
    provider.add_span_processor(processor)
    _state.provider = provider
    _state.tracer = provider.get_tracer(INSTRUMENTATION_NAME)
    _state.enabled = True
    # Also the global provider, for an application's own instrumentation in this
    # process; the first one set stays (the API refuses to replace it).
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(provider)
    return provider


def _exporting_processor(settings: TracingSettings) -> SpanProcessor:
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SpanExporter,
    )

    exporter: SpanExporter
    if settings.exporter is TracesExporter.CONSOLE:
        # On stderr: stdout is a command's answer (``--json``), which spans would spoil.
        exporter = ConsoleSpanExporter(out=sys.stderr)
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # Endpoint, headers, timeout and compression from OTEL_EXPORTER_OTLP_*.
        exporter = OTLPSpanExporter()
    # Queue size, batch size and delay from OTEL_BSP_*: a full queue drops spans.
    return BatchSpanProcessor(exporter)


def _sampler(settings: TracingSettings) -> Sampler:
    from opentelemetry.sdk.trace import sampling

    ratio = settings.sampler_ratio
    match settings.sampler:
        case SamplerName.ALWAYS_ON:
            return sampling.ALWAYS_ON
        case SamplerName.ALWAYS_OFF:
            return sampling.ALWAYS_OFF
        case SamplerName.TRACE_ID_RATIO:
            return sampling.TraceIdRatioBased(ratio)
        case SamplerName.PARENT_ALWAYS_OFF:
            return sampling.DEFAULT_OFF
        case SamplerName.PARENT_TRACE_ID_RATIO:
            return sampling.ParentBasedTraceIdRatio(ratio)
        case _:
            return sampling.DEFAULT_ON


def _flush_at_exit() -> None:
    # Bounded: the export thread is a daemon, so whatever is still queued after this
    # is dropped with the process rather than holding its exit.
    flush_spans()
