"""LLM metrics, recorded by the client's observer, add up to what the usage meter and the
provider (the local test server) counted: calls, tokens, 429s, errors, cache hits."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from hopindex.backends.llm.cache import SqliteResponseCache
from hopindex.backends.llm.client import ChatRequest, LlmClient, LlmSettings
from hopindex.backends.llm.ratelimit import InProcessRateLimiter, RateLimits
from hopindex.backends.llm.usage import UsageMeter
from hopindex.backends.registry import open_llm_observer
from hopindex.core.settings import MetricsMode, Settings
from hopindex.monitoring.llm import PrometheusLlmObserver
from hopindex.monitoring.tasks import install_task_hooks
from hopindex.testing.llm_limits import Endpoint, Outcome
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer, running_llm_server

MODEL = "hopindex-test-llm"


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[LlmTestServer]:
    config: LlmServerConfig = getattr(request, "param", LlmServerConfig())
    with running_llm_server(config) as test_server:
        yield test_server


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def requests(stage: str, outcome: str) -> float:
    return sample("hopindex_llm_requests_total", stage=stage, model=MODEL, outcome=outcome)


def client_for(server: LlmTestServer, cache: SqliteResponseCache | None = None) -> LlmClient:
    settings = LlmSettings(base_url=server.base_url, model=MODEL, api_key="k", timeout_s=10.0,
                           max_attempts=10, backoff_base_s=0.01, backoff_max_s=0.05)
    return LlmClient(settings, InProcessRateLimiter(RateLimits(requests_per_minute=60_000)),
                     cache, observer=PrometheusLlmObserver())


def ask(client: LlmClient, stage: str, n: int, usage: UsageMeter) -> None:
    async def run() -> None:
        for i in range(n):
            await client.complete(ChatRequest(stage=stage, max_tokens=20, messages=(
                ("user", f"Context: Alpha Beta {i}.\nQuestion: Who is {i}?\nAnswer:"),)), usage)
        await client.close()

    asyncio.run(run())


def test_calls_and_tokens_match_the_usage_meter_and_the_server(server: LlmTestServer) -> None:
    """ok requests = calls; token counters = the provider's reported tokens; one duration
    and one limiter admission per request."""
    stage = "observer-ok"
    usage = UsageMeter()
    ask(client_for(server), stage, 5, usage)
    total = usage.total()
    assert requests(stage, "ok") == total.calls == server.stats.count(Endpoint.CHAT) == 5
    assert sample("hopindex_llm_tokens_total", stage=stage, model=MODEL,
                  kind="prompt") == total.prompt_tokens == server.stats.prompt_tokens
    assert sample("hopindex_llm_tokens_total", stage=stage, model=MODEL,
                  kind="completion") == total.completion_tokens
    assert sample("hopindex_llm_request_duration_seconds_count", stage=stage, model=MODEL) == 5
    assert sample("hopindex_ratelimit_wait_seconds_count", stage=stage, model=MODEL) == 5
    assert sample("hopindex_ratelimit_wait_seconds_sum", stage=stage,
                  model=MODEL) == pytest.approx(total.limiter_wait_s)


@pytest.mark.parametrize("server", [LlmServerConfig(fail_429=0.3, fail_500=0.2, seed=3)],
                         indirect=True)
def test_429s_and_server_errors_are_counted_by_outcome(server: LlmTestServer) -> None:
    """Every refused request is counted under its outcome, as the server saw it, and the
    successful ones still equal the usage meter's calls."""
    stage = "observer-faults"
    usage = UsageMeter()
    ask(client_for(server), stage, 20, usage)
    stats = server.stats
    assert requests(stage, "rate_limited") == stats.count(Endpoint.CHAT, Outcome.RATE_LIMITED) > 0
    assert requests(stage, "server_error") == stats.count(Endpoint.CHAT, Outcome.SERVER_ERROR) > 0
    assert requests(stage, "ok") == usage.total().calls == 20


def test_cache_hits_and_misses_are_counted(server: LlmTestServer, tmp_path: Path) -> None:
    """The same request twice: one miss that calls the provider, then one hit."""
    stage = "observer-cache"
    usage = UsageMeter()
    cache_path = tmp_path / "cache.sqlite3"
    ask(client_for(server, SqliteResponseCache(cache_path)), stage, 1, usage)
    ask(client_for(server, SqliteResponseCache(cache_path)), stage, 1, usage)
    assert sample("hopindex_llm_cache_requests_total", stage=stage, result="miss") == 1
    assert sample("hopindex_llm_cache_requests_total", stage=stage, result="hit") == 1
    assert usage.total().cache_hits == 1
    assert requests(stage, "ok") == 1


def test_the_registry_hands_clients_an_observer_only_when_metrics_are_on() -> None:
    """HOPINDEX_METRICS=off: no observer, so the client records nothing; on, the one the
    task hooks installed."""
    install_task_hooks(Settings(), lambda: pytest.fail("no runtime needed"))
    assert open_llm_observer(Settings(metrics=MetricsMode.OFF)) is None
    assert isinstance(open_llm_observer(Settings()), PrometheusLlmObserver)
