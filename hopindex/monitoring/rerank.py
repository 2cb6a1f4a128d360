"""The rerankers' observer that records Prometheus metrics.

``backends/registry.py`` hands it to each reranker when metrics are on: every request
to the service (or run of the local cross-encoder) with its outcome and duration, each
score-cache lookup (and each failed cache read or write), and each rate-limiter
admission.
"""

from __future__ import annotations

from hopindex.backends.rerank.observer import CacheOperation, RerankOutcome
from hopindex.monitoring import metrics as m
from hopindex.monitoring.labels import CacheResult


class PrometheusRerankObserver:
    def observe_cache(self, *, hit: bool) -> None:
        result = CacheResult.HIT if hit else CacheResult.MISS
        m.RERANK_CACHE_REQUESTS.labels(result=result.value).inc()

    def observe_cache_error(self, operation: CacheOperation) -> None:
        m.RERANK_CACHE_ERRORS.labels(operation=operation.value).inc()

    def observe_wait(self, model: str, waited_s: float) -> None:
        m.RERANK_RATELIMIT_WAIT.labels(model=model).observe(waited_s)

    def observe_request(self, model: str, outcome: RerankOutcome, duration_s: float) -> None:
        m.RERANK_REQUESTS.labels(model=model, outcome=outcome.value).inc()
        m.RERANK_REQUEST_DURATION.labels(model=model).observe(duration_s)
