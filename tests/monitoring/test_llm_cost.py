"""``hopindex_llm_cost_total``: what priced LLM calls cost, by stage and model, equal to the
cost the usage meter recorded and to the provider's tokens times the configured prices;
unpriced calls leave it alone."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from prometheus_client import REGISTRY, generate_latest

from hopindex.backends.llm.client import ChatRequest, LlmClient, LlmSettings
from hopindex.backends.llm.ratelimit import InProcessRateLimiter, RateLimits
from hopindex.backends.llm.usage import LlmPrices, UsageMeter
from hopindex.monitoring.llm import PrometheusLlmObserver
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer, running_llm_server

MODEL = "hopindex-test-llm"
PRICES = LlmPrices(input_per_mtok=2.5, output_per_mtok=10.0)


@pytest.fixture
def server() -> Iterator[LlmTestServer]:
    with running_llm_server(LlmServerConfig()) as test_server:
        yield test_server


def cost_sample(stage: str) -> float | None:
    return REGISTRY.get_sample_value("hopindex_llm_cost_total", {"stage": stage, "model": MODEL})


def ask(server: LlmTestServer, stage: str, n: int, usage: UsageMeter,
        prices: LlmPrices) -> None:
    settings = LlmSettings(base_url=server.base_url, model=MODEL, api_key="k", timeout_s=10.0,
                           prices=prices)

    async def run() -> None:
        client = LlmClient(settings, InProcessRateLimiter(RateLimits(requests_per_minute=60_000)),
                           observer=PrometheusLlmObserver())
        for i in range(n):
            await client.complete(ChatRequest(stage=stage, max_tokens=20, messages=(
                ("user", f"Context: Gamma Delta {i}.\nQuestion: Who is {i}?\nAnswer:"),)), usage)
        await client.close()

    asyncio.run(run())


def test_priced_calls_add_their_cost_by_stage_and_model(server: LlmTestServer) -> None:
    """The counter equals the meter's cost, which equals the server's prompt and
    completion tokens times their own prices per million."""
    stage = "cost-priced"
    usage = UsageMeter()
    ask(server, stage, 4, usage, PRICES)
    total = usage.total()
    expected = (server.stats.prompt_tokens * 2.5 + server.stats.completion_tokens * 10.0) / 1e6
    assert server.stats.prompt_tokens > 0 and server.stats.completion_tokens > 0
    assert total.cost == pytest.approx(expected)
    assert cost_sample(stage) == pytest.approx(expected)


def test_the_cost_series_is_exported_with_stage_and_model_labels(server: LlmTestServer) -> None:
    """The exposition text carries ``hopindex_llm_cost_total{model=...,stage=...}``, the
    labels the token counter uses."""
    stage = "cost-exported"
    ask(server, stage, 1, UsageMeter(), PRICES)
    text = generate_latest(REGISTRY).decode()
    assert "# TYPE hopindex_llm_cost_total counter" in text
    line = next(x for x in text.splitlines()
                if x.startswith("hopindex_llm_cost_total{") and f'stage="{stage}"' in x)
    assert f'model="{MODEL}"' in line
    assert float(line.rsplit(" ", 1)[1]) > 0


def test_unpriced_calls_count_tokens_but_no_cost(server: LlmTestServer) -> None:
    """Without prices the tokens are counted and no cost series appears (not a zero)."""
    stage = "cost-unpriced"
    usage = UsageMeter()
    ask(server, stage, 2, usage, LlmPrices())
    assert usage.total().cost is None
    assert REGISTRY.get_sample_value("hopindex_llm_tokens_total", {
        "stage": stage, "model": MODEL, "kind": "prompt"}) == server.stats.prompt_tokens
    assert cost_sample(stage) is None
    assert f'stage="{stage}"' not in "\n".join(
        x for x in generate_latest(REGISTRY).decode().splitlines()
        if x.startswith("hopindex_llm_cost_total"))
