"""Each request the LLM client sends is a span with the gen_ai attributes (and
hopindex's), a retry a span of its own, a cache hit a span without a request."""

from __future__ import annotations

import asyncio
from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from hopindex.backends.llm.cache import SqliteResponseCache
from hopindex.backends.llm.client import LlmClient, LlmSettings
from hopindex.backends.llm.ratelimit import InProcessRateLimiter, RateLimits
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.tracing import span
from hopindex.testing.llm_limits import Endpoint, Outcome
from hopindex.testing.llm_server import LlmServerConfig, running_llm_server
from tests.backends.llm.test_client import ANSWER, STAGE1
from tests.tracing import named, traced  # noqa: F401  # traced: a fixture

MODEL = "hopindex-test-llm"
SEED = 1


def _client(base_url: str, tmp_path: Path) -> LlmClient:
    settings = LlmSettings(base_url=base_url, model=MODEL, api_key="k", timeout_s=10.0,
                           max_attempts=6, backoff_base_s=0.01, backoff_max_s=0.05)
    return LlmClient(settings, InProcessRateLimiter(RateLimits(requests_per_minute=6000)),
                     SqliteResponseCache(tmp_path / "cache.sqlite3"))


def test_a_request_span_carries_the_gen_ai_attributes(
        traced: InMemorySpanExporter, tmp_path: Path) -> None:  # noqa: F811  # the fixture
    """One answered call: one CLIENT span ``chat <model>`` under the caller's span, with
    the provider, the models, the tokens the server counted and the finish reason."""
    async def scenario() -> None:
        client = _client(server.base_url, tmp_path)
        with span("caller"):
            await client.complete(ANSWER, UsageMeter())
        await client.close()

    with running_llm_server(LlmServerConfig(model=MODEL)) as server:
        asyncio.run(scenario())
        stats = server.stats
    spans = traced.get_finished_spans()
    [call] = named(spans, f"chat {MODEL}")
    [caller] = named(spans, "caller")
    assert call.kind is SpanKind.CLIENT
    assert call.parent is not None and call.parent.span_id == caller.context.span_id
    attributes = dict(call.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.system"] == attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == MODEL
    assert attributes["gen_ai.response.model"] == MODEL
    assert attributes["gen_ai.usage.input_tokens"] == stats.prompt_tokens > 0
    assert attributes["gen_ai.usage.output_tokens"] == stats.completion_tokens > 0
    assert list(attributes["gen_ai.response.finish_reasons"]) == ["stop"]
    assert attributes["hopindex.stage"] == "answer"
    assert attributes["hopindex.llm.attempt"] == 1
    assert attributes["hopindex.llm.cache_hit"] is False
    assert "hopindex.llm.rate_limit_wait_s" in attributes
    assert attributes["server.address"] == "127.0.0.1"


def test_each_retry_is_a_span_and_a_cache_hit_is_one_too(
        traced: InMemorySpanExporter, tmp_path: Path) -> None:  # noqa: F811  # the fixture
    """Requests refused with 429 before an answer: a span each, attempts counted from 1,
    the refused ones with their error type and an error status; asked again, the cached
    reply is one span with cache_hit true and no tokens."""
    async def scenario() -> None:
        client = _client(server.base_url, tmp_path)
        await client.complete_json(STAGE1, lambda v: v["qa_pairs"], UsageMeter())
        await client.complete_json(STAGE1, lambda v: v["qa_pairs"], UsageMeter())
        await client.close()

    # The seed draws a 429 for the first request (faults are drawn in arrival order).
    with running_llm_server(LlmServerConfig(model=MODEL, fail_429=0.6, seed=SEED)) as server:
        asyncio.run(scenario())
        refused = server.stats.count(Endpoint.CHAT, Outcome.RATE_LIMITED)
    calls = sorted(named(traced.get_finished_spans(), f"chat {MODEL}"),
                   key=lambda s: s.start_time or 0)
    sent, hit = calls[:-1], dict(calls[-1].attributes or {})
    assert refused >= 1 and len(sent) == refused + 1
    assert [dict(s.attributes or {})["hopindex.llm.attempt"] for s in sent] == list(
        range(1, len(sent) + 1))
    assert [dict(s.attributes or {}).get("error.type") for s in sent] == [
        "RateLimitError"] * refused + [None]
    assert [s.status.status_code for s in sent] == [StatusCode.ERROR] * refused + [
        StatusCode.UNSET]
    assert hit["hopindex.llm.cache_hit"] is True
    assert "gen_ai.usage.input_tokens" not in hit
