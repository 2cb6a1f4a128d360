"""Per-query metrics: what every query method's response reports, into histograms.

``Hopindex.query`` hands each result here, so every front door (CLI, HTTP API,
evaluation) and every method is measured the same way, with the very numbers the
response carries: its latency, its LLM calls, tokens and cache hits, and its time
per phase.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from hopindex.core.settings import MetricsMode, Settings
from hopindex.core.tracing.spans import trace_exemplar
from hopindex.methods.phases import PHASES
from hopindex.methods.registry import query_method_names
from hopindex.monitoring.labels import QueryOutcome, TokenKind

if TYPE_CHECKING:
    from prometheus_client.metrics import Histogram

    from hopindex.methods.base import QueryResult

# Label values outside the known sets collapse to these, so no input can grow the series.
UNKNOWN_METHOD = "unknown"
OTHER_PHASE = "other"


class QueryRecorder(Protocol):
    def record_query(self, result: QueryResult) -> None: ...
    def record_failure(self, method: str | None) -> None: ...
    def record_first_token(self, method: str, seconds: float) -> None: ...


class NullQueryRecorder:
    """Records nothing (HOPINDEX_METRICS=off)."""

    def record_query(self, result: QueryResult) -> None:
        return None

    def record_failure(self, method: str | None) -> None:
        return None

    def record_first_token(self, method: str, seconds: float) -> None:
        return None


class _MethodSeries:
    """One method's label children, looked up once: a query pays only the observations."""

    __slots__ = ("_method", "cache_hits", "calls", "completion", "duration", "ok", "phases",
                 "prompt")

    def __init__(self, method: str) -> None:
        from hopindex.monitoring import metrics as m

        self.ok = m.QUERIES.labels(method=method, outcome=QueryOutcome.OK.value)
        self.duration = m.QUERY_DURATION.labels(method=method)
        self.calls = m.QUERY_LLM_CALLS.labels(method=method)
        self.prompt = m.QUERY_TOKENS.labels(method=method, kind=TokenKind.PROMPT.value)
        self.completion = m.QUERY_TOKENS.labels(method=method,
                                                kind=TokenKind.COMPLETION.value)
        self.cache_hits = m.QUERY_CACHE_HITS.labels(method=method)
        # Made at a phase's first use: a method shows only the phases it has.
        self.phases: dict[str, Histogram] = {}
        self._method = method

    def phase(self, name: str) -> Histogram:
        series = self.phases.get(name)
        if series is None:
            from hopindex.monitoring import metrics as m

            label = name if name in PHASES else OTHER_PHASE
            series = self.phases[name] = m.QUERY_PHASE_DURATION.labels(method=self._method,
                                                                       phase=label)
        return series


class PrometheusQueryRecorder:
    def __init__(self) -> None:
        # Read at the first query, not here: loading the methods imports the LLM SDK,
        # which a CLI command that never queries must not pay for.
        self._known: frozenset[str] = frozenset()
        self._series: dict[str, _MethodSeries] = {}
        self._lock = threading.Lock()

    def record_query(self, result: QueryResult) -> None:
        series = self._series_of(result.method)
        usage = result.usage
        series.ok.inc()
        series.duration.observe(result.latency_s, exemplar=trace_exemplar())
        series.calls.observe(usage.llm_calls)
        series.prompt.observe(usage.prompt_tokens)
        series.completion.observe(usage.completion_tokens)
        series.cache_hits.observe(usage.cache_hits)
        for phase, seconds in usage.phases_s.items():
            series.phase(phase).observe(seconds)

    def record_failure(self, method: str | None) -> None:
        from hopindex.monitoring import metrics as m

        m.QUERIES.labels(method=self._label_of(method),
                         outcome=QueryOutcome.ERROR.value).inc()

    def record_first_token(self, method: str, seconds: float) -> None:
        from hopindex.monitoring import metrics as m

        m.QUERY_FIRST_TOKEN.labels(method=self._label_of(method)).observe(seconds)

    def _series_of(self, method: str) -> _MethodSeries:
        series = self._series.get(method)
        if series is None:
            with self._lock:
                series = self._series.setdefault(method, _MethodSeries(self._label_of(method)))
        return series

    def _label_of(self, method: str | None) -> str:
        if method is None:
            return UNKNOWN_METHOD
        if method not in self._known:
            # A method registered since the last look (a plugin) is known from now on.
            self._known = frozenset(query_method_names())
        return method if method in self._known else UNKNOWN_METHOD


def query_recorder(settings: Settings) -> QueryRecorder:
    """Prometheus histograms when HOPINDEX_METRICS is on, else nothing."""
    if settings.metrics is MetricsMode.OFF:
        return NullQueryRecorder()
    return PrometheusQueryRecorder()
