"""Per-query metrics receive exactly the numbers a query response carries."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import REGISTRY

from hopindex.core.settings import MetricsMode, Settings
from hopindex.core.tracing import span
from hopindex.core.tracing.spans import trace_exemplar
from hopindex.methods.base import QueryResult, QueryUsage
from hopindex.monitoring.exposition import render_metrics
from hopindex.monitoring.queries import (
    NullQueryRecorder,
    PrometheusQueryRecorder,
    query_recorder,
)
from tests.tracing import traced  # noqa: F401  # a fixture


def sample(name: str, **labels: str) -> float:
    """A sample of the process's default registry; 0 for a series not made yet."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def snapshot(method: str) -> dict[str, float]:
    return {
        "ok": sample("hopindex_queries_total", method=method, outcome="ok"),
        "duration_sum": sample("hopindex_query_duration_seconds_sum", method=method),
        "duration_count": sample("hopindex_query_duration_seconds_count", method=method),
        "calls_sum": sample("hopindex_query_llm_calls_sum", method=method),
        "prompt_sum": sample("hopindex_query_tokens_sum", method=method, kind="prompt"),
        "completion_sum": sample("hopindex_query_tokens_sum", method=method, kind="completion"),
        "cache_hits_sum": sample("hopindex_query_cache_hits_sum", method=method),
        "embed_sum": sample("hopindex_query_phase_duration_seconds_sum", method=method,
                            phase="embed"),
        "answer_sum": sample("hopindex_query_phase_duration_seconds_sum", method=method,
                             phase="answer"),
        "other_sum": sample("hopindex_query_phase_duration_seconds_sum", method=method,
                            phase="other"),
        "calls_le_2": sample("hopindex_query_llm_calls_bucket", method=method, le="2.0"),
        "calls_le_1": sample("hopindex_query_llm_calls_bucket", method=method, le="1.0"),
    }


def result(method: str = "indexrag") -> QueryResult:
    usage = QueryUsage(llm_calls=2, prompt_tokens=900, completion_tokens=12, cache_hits=1,
                       phases_s={"embed": 0.004, "answer": 0.25, "made_up_phase": 0.5})
    return QueryResult(question="q", method=method, index="i", passages=[], usage=usage,
                       latency_s=0.3125)


def test_histograms_receive_the_response_numbers() -> None:
    """Latency, LLM calls, prompt/completion tokens, cache hits and each phase's time go
    into their histograms as the response reports them, under the method's label."""
    before = snapshot("indexrag")
    PrometheusQueryRecorder().record_query(result())
    after = snapshot("indexrag")
    delta = {k: after[k] - before[k] for k in after}
    assert delta["ok"] == 1
    assert delta["duration_count"] == 1
    assert delta["duration_sum"] == pytest.approx(0.3125)
    assert delta["calls_sum"] == 2
    assert (delta["calls_le_1"], delta["calls_le_2"]) == (0, 1)
    assert (delta["prompt_sum"], delta["completion_sum"]) == (900, 12)
    assert delta["cache_hits_sum"] == 1
    assert delta["embed_sum"] == pytest.approx(0.004)
    assert delta["answer_sum"] == pytest.approx(0.25)


def test_an_unknown_phase_is_counted_as_other_not_as_a_new_series() -> None:
    """A phase name outside the vocabulary cannot grow the series: it lands in 'other'."""
    before = snapshot("indexrag")["other_sum"]
    PrometheusQueryRecorder().record_query(result())
    assert snapshot("indexrag")["other_sum"] - before == pytest.approx(0.5)
    assert REGISTRY.get_sample_value("hopindex_query_phase_duration_seconds_count",
                                     {"method": "indexrag", "phase": "made_up_phase"}) is None


def test_failures_count_by_method_and_unknown_names_collapse() -> None:
    """A failed query counts as an error of its method; a method name nobody registered
    (user input) is counted as 'unknown' so it cannot make a series of its own."""
    recorder = PrometheusQueryRecorder()
    naive = sample("hopindex_queries_total", method="naive", outcome="error")
    unknown = sample("hopindex_queries_total", method="unknown", outcome="error")
    recorder.record_failure("naive")
    recorder.record_failure("no-such-method-42")
    recorder.record_failure(None)
    assert sample("hopindex_queries_total", method="naive", outcome="error") - naive == 1
    assert sample("hopindex_queries_total", method="unknown", outcome="error") - unknown == 2
    assert REGISTRY.get_sample_value("hopindex_queries_total", {
        "method": "no-such-method-42", "outcome": "error"}) is None


def test_metrics_off_records_nothing() -> None:
    """HOPINDEX_METRICS=off gives the recorder that records nothing; on gives Prometheus."""
    assert isinstance(query_recorder(Settings(metrics=MetricsMode.OFF)), NullQueryRecorder)
    assert isinstance(query_recorder(Settings()), PrometheusQueryRecorder)
    before = snapshot("naive")
    NullQueryRecorder().record_query(result("naive"))
    assert snapshot("naive") == before


def test_a_traced_query_latency_names_its_trace_as_an_exemplar(
        traced: InMemorySpanExporter) -> None:  # noqa: F811  # the fixture
    """Recorded inside a sampled span, the latency observation carries the trace's id
    as an exemplar, which the OpenMetrics exposition shows on its bucket; outside a
    span there is none to give."""
    with span("query") as current:
        PrometheusQueryRecorder().record_query(result("naive"))
    trace_id = f"{current.get_span_context().trace_id:032x}"  # type: ignore[attr-defined]
    body, _ = render_metrics(REGISTRY, "application/openmetrics-text")
    bucket = next(line for line in body.decode().splitlines()
                  if line.startswith("hopindex_query_duration_seconds_bucket{")
                  and 'method="naive"' in line and 'le="0.5"' in line)
    assert f'# {{trace_id="{trace_id}"}} 0.3125' in bucket
    assert trace_exemplar() is None
