"""Reranker metrics, recorded by the Prometheus observer, add up to what the service
(the local test server) counted: requests by outcome, their durations, limiter
admissions and score-cache lookups; the registry hands the observer to rerankers only
when metrics are on."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from hopindex.backends.llm.cache import SqliteResponseCache
from hopindex.backends.registry import open_rerank_observer
from hopindex.backends.rerank.http_reranker import HttpReranker, RerankHttpConfig
from hopindex.core.settings import MetricsMode, Settings
from hopindex.monitoring.exposition import exported_series_names
from hopindex.monitoring.rerank import PrometheusRerankObserver
from hopindex.monitoring.tasks import install_task_hooks
from hopindex.testing.llm_limits import Endpoint, LlmServerConfig, Outcome
from hopindex.testing.llm_server import running_llm_server
from tests.redis_server import unique_key

TEXTS = ["Marie Curie was born in Warsaw.", "Photosynthesis converts light."]


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_requests_by_outcome_match_the_servers_counts(tmp_path: Path) -> None:
    """Each request is counted under its outcome as the server saw it, timed, and
    admitted by the limiter once; a repeated call is a cache hit and no request."""
    model = unique_key("rerank-metrics")  # the registry is the process's: a fresh label
    hits, misses = sample("hopindex_rerank_cache_total", result="hit"), sample(
        "hopindex_rerank_cache_total", result="miss")
    with running_llm_server(LlmServerConfig(fail_429=0.3, fail_500=0.2, seed=3)) as server:
        config = RerankHttpConfig(url=server.root_url + "/v1/rerank", model=model,
                                  max_attempts=20, backoff_base_s=0.01, backoff_max_s=0.05)
        reranker = HttpReranker(config, observer=PrometheusRerankObserver(),
                                cache=lambda: SqliteResponseCache(tmp_path / "c.sqlite3"))
        try:
            for n in range(8):
                reranker.rerank_texts(f"who was born in warsaw {n}", TEXTS)
            reranker.rerank_texts("who was born in warsaw 0", TEXTS)
        finally:
            reranker.close()
        stats = server.stats
    for outcome, counted in (("ok", Outcome.OK), ("rate_limited", Outcome.RATE_LIMITED),
                             ("server_error", Outcome.SERVER_ERROR)):
        assert sample("hopindex_rerank_requests_total", model=model,
                      outcome=outcome) == stats.count(Endpoint.RERANK, counted)
    sent = stats.count(Endpoint.RERANK)
    assert stats.count(Endpoint.RERANK, Outcome.OK) == 8 and sent > 8
    assert sample("hopindex_rerank_request_duration_seconds_count", model=model) == sent
    assert sample("hopindex_rerank_ratelimit_wait_seconds_count", model=model) == sent
    assert sample("hopindex_rerank_cache_total", result="hit") == hits + 1
    assert sample("hopindex_rerank_cache_total", result="miss") == misses + 8


def test_the_rerank_series_are_exported() -> None:
    """Dashboards and rules may query them (the exported names are what they check)."""
    assert {"hopindex_rerank_requests_total", "hopindex_rerank_request_duration_seconds_count",
            "hopindex_rerank_cache_total", "hopindex_rerank_cache_errors_total",
            "hopindex_rerank_ratelimit_wait_seconds_bucket"} <= exported_series_names()


def test_the_registry_hands_rerankers_an_observer_only_when_metrics_are_on() -> None:
    install_task_hooks(Settings(), lambda: pytest.fail("no runtime needed"))
    assert open_rerank_observer(Settings(metrics=MetricsMode.OFF)) is None
    assert isinstance(open_rerank_observer(Settings()), PrometheusRerankObserver)
