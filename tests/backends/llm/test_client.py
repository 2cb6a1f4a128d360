"""The LLM client against the local OpenAI-compatible test server: cache, retries, limits,
JSON validation and usage accounting, with the real ``openai`` SDK in between."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hopindex.backends.llm.cache import SqliteResponseCache
from hopindex.backends.llm.client import (
    ChatRequest,
    LlmClient,
    LlmSettings,
    ResponseFormat,
)
from hopindex.backends.llm.ratelimit import (
    InProcessRateLimiter,
    RateLimiter,
    RateLimits,
    rate_limiter_for,
)
from hopindex.backends.llm.runner import LlmRunner
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.errors import LlmAuthenticationError, LlmOutputError, LlmUnavailableError
from hopindex.testing.llm_limits import Endpoint, Outcome
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer, running_llm_server
from tests.redis_server import redis_url  # noqa: F401  # re-exported fixture

ANSWER = ChatRequest(stage="answer", max_tokens=50, messages=(
    ("user", "Context: Marie Curie was born in Warsaw. Warsaw is in Poland.\n"
             "Question: Where was Marie Curie born?\nAnswer:"),))
STAGE1 = ChatRequest(stage="stage1", messages=(
    ("user", 'Extract every fact as "qa_pairs" and list "entities".\n'
             "Document: Marie Curie was born in Warsaw. She moved to Paris in 1891."),))


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[LlmTestServer]:
    config: LlmServerConfig = getattr(request, "param", LlmServerConfig())
    with running_llm_server(config) as test_server:
        yield test_server


def make_client(server: LlmTestServer, tmp_path: Path | None = None, *, api_key: str = "k",
                timeout_s: float = 10.0, max_attempts: int = 6) -> LlmClient:
    settings = LlmSettings(base_url=server.base_url, model="hopindex-test-llm", api_key=api_key,
                           timeout_s=timeout_s, max_attempts=max_attempts,
                           backoff_base_s=0.01, backoff_max_s=0.05)
    cache = SqliteResponseCache(tmp_path / "cache.sqlite3") if tmp_path else None
    return LlmClient(settings, InProcessRateLimiter(RateLimits(requests_per_minute=6000)), cache)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_usage_reported_equals_what_the_server_counted(server: LlmTestServer) -> None:
    """Calls and prompt/completion tokens recorded per stage match the server's counters."""
    async def scenario() -> UsageMeter:
        client = make_client(server)
        usage = UsageMeter()
        await client.complete(ANSWER, usage)
        await client.complete_json(STAGE1, lambda v: v["qa_pairs"], usage)
        await client.close()
        return usage

    usage = run(scenario())
    stats = server.stats
    total = usage.total()
    assert total.calls == stats.count(Endpoint.CHAT) == 2
    assert total.prompt_tokens == stats.prompt_tokens
    assert total.completion_tokens == stats.completion_tokens
    assert set(usage.stages) == {"answer", "stage1"}


def test_cached_response_costs_no_call(server: LlmTestServer, tmp_path: Path) -> None:
    """The same request twice reaches the server once; the second is a cache hit."""
    async def scenario() -> tuple[str, str, UsageMeter]:
        usage = UsageMeter()
        first = make_client(server, tmp_path)
        a = (await first.complete(ANSWER, usage)).content
        await first.close()
        second = make_client(server, tmp_path)  # a new process would open the same file
        b = (await second.complete(ANSWER, usage)).content
        await second.close()
        return a, b, usage

    a, b, usage = run(scenario())
    assert a == b
    assert server.stats.count(Endpoint.CHAT) == 1
    assert usage.total().cache_hits == 1


def test_json_reply_is_parsed_and_validated(server: LlmTestServer) -> None:
    """A stage-1 reply parses into QA pairs with entities."""
    async def scenario() -> Any:
        client = make_client(server)
        value = await client.complete_json(STAGE1, lambda v: (v["qa_pairs"], v["entities"]),
                                           UsageMeter())
        await client.close()
        return value

    pairs, entities = run(scenario())
    assert pairs and all({"question", "answer"} <= p.keys() for p in pairs)
    assert isinstance(entities, list)


@pytest.mark.parametrize("server", [LlmServerConfig(fail_invalid_json=1.0)], indirect=True)
def test_invalid_json_gets_one_repair_then_fails_permanently(server: LlmTestServer) -> None:
    """Invalid JSON twice: exactly one repair call, then a permanent LlmOutputError."""
    async def scenario() -> None:
        client = make_client(server)
        try:
            await client.complete_json(STAGE1, lambda v: v["qa_pairs"], UsageMeter())
        finally:
            await client.close()

    with pytest.raises(LlmOutputError, match="stage1"):
        run(scenario())
    assert server.stats.count(Endpoint.CHAT, Outcome.INVALID_JSON) == 2


@pytest.mark.parametrize("server", [LlmServerConfig(fail_429=0.3, fail_500=0.2, seed=7)],
                         indirect=True)
def test_a_storm_of_429s_and_500s_is_retried_to_success(server: LlmTestServer) -> None:
    """With half the requests failing, every call still succeeds after retries."""
    async def scenario() -> UsageMeter:
        client = make_client(server, max_attempts=10)
        usage = UsageMeter()
        for i in range(20):
            request = ChatRequest(stage="answer", max_tokens=20, messages=(
                ("user", f"Context: Alpha Beta {i}.\nQuestion: Who is {i}?\nAnswer:"),))
            await client.complete(request, usage)
        await client.close()
        return usage

    usage = run(scenario())
    stats = server.stats
    assert usage.total().calls == stats.count(Endpoint.CHAT, Outcome.OK) == 20
    assert usage.total().retries == (stats.count(Endpoint.CHAT, Outcome.RATE_LIMITED)
                                     + stats.count(Endpoint.CHAT, Outcome.SERVER_ERROR)) > 0


@pytest.mark.parametrize("server", [LlmServerConfig(api_key="right")], indirect=True)
def test_wrong_api_key_fails_at_once_without_retries(server: LlmTestServer) -> None:
    """A refused key is a configuration error raised on the first answer, never retried."""
    async def scenario() -> None:
        client = make_client(server, api_key="wrong")
        try:
            await client.complete(ANSWER, UsageMeter())
        finally:
            await client.close()

    with pytest.raises(LlmAuthenticationError, match="API key"):
        run(scenario())
    assert server.stats.count(Endpoint.CHAT) == 1


@pytest.mark.parametrize("server", [LlmServerConfig(fail_timeout=1.0)], indirect=True)
def test_a_hanging_server_times_out_and_gives_up_after_the_retry_budget(
        server: LlmTestServer) -> None:
    """Each attempt times out; after max_attempts the error is retryable for the task."""
    async def scenario() -> None:
        client = make_client(server, timeout_s=0.3, max_attempts=2)
        try:
            await client.complete(ANSWER, UsageMeter())
        finally:
            await client.close()

    with pytest.raises(LlmUnavailableError) as caught:
        run(scenario())
    assert caught.value.retryable
    assert server.stats.count(Endpoint.CHAT, Outcome.TIMEOUT) == 2


def test_json_request_asks_for_a_json_object(server: LlmTestServer) -> None:
    """complete_json sends response_format json_object even for a TEXT request."""
    assert STAGE1.response_format is ResponseFormat.TEXT

    async def scenario() -> None:
        client = make_client(server)
        await client.complete_json(STAGE1, lambda v: v, UsageMeter())
        await client.close()

    run(scenario())
    assert server.stats.count(Endpoint.CHAT, Outcome.OK) == 1


@pytest.mark.parametrize("shared", [False, True], ids=["in-process", "redis"])
def test_no_limits_and_no_429s_report_no_limiter_wait(server: LlmTestServer, shared: bool,
                                                      request: pytest.FixtureRequest) -> None:
    """Forty-eight concurrent calls, sixteen in flight, with no requests/min or tokens/min
    set and no 429: the usage (what a job record's limiter_wait_s sums) reports 0 s of
    waiting, whether the limiter is in-process or shared through Redis."""
    url = request.getfixturevalue("redis_url") if shared else ""
    settings = LlmSettings(base_url=server.base_url, model="hopindex-test-llm", api_key="k")

    def build() -> LlmClient:
        limiter: RateLimiter = rate_limiter_for(url, RateLimits(requests_per_minute=None))
        return LlmClient(settings, limiter)

    runner = LlmRunner(build, concurrency=16)
    usage = UsageMeter()
    try:
        outcomes = runner.complete_json_many(
            [ChatRequest(stage="stage1", messages=(("user", f"{STAGE1.messages[0][1]} {n}"),))
             for n in range(48)], lambda v: v["qa_pairs"], usage)
    finally:
        runner.close()
    assert not [o for o in outcomes if isinstance(o, Exception)]
    assert usage.total().calls == 48
    assert usage.total().limiter_wait_s == 0.0

