"""Traces into the SDK's in-memory exporter, for tests in one process (import ``traced``
as a fixture)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hopindex.core.tracing import stop_tracing, use_span_processor


@pytest.fixture
def traced() -> Iterator[InMemorySpanExporter]:
    """Tracing on in this process, every ended span kept; off again afterwards."""
    exporter = InMemorySpanExporter()
    use_span_processor(SimpleSpanProcessor(exporter))
    try:
        yield exporter
    finally:
        stop_tracing()


def named(spans: tuple[ReadableSpan, ...] | list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def one(spans: tuple[ReadableSpan, ...] | list[ReadableSpan], name: str) -> ReadableSpan:
    found = named(spans, name)
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]
