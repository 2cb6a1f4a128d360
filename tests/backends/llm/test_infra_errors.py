"""What fails around an LLM call is the item's fault or the infrastructure's: the runner
returns the first kind in the item's place and raises the second (the task retries);
the cache never costs a paid reply. Real caches and limiters, failing for real, and the
local test server in between."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from hopindex.backends.llm.cache import ResponseCache, SqliteResponseCache
from hopindex.backends.llm.cache_redis import RedisResponseCache
from hopindex.backends.llm.client import ChatRequest, LlmClient, LlmSettings
from hopindex.backends.llm.ratelimit import (
    InProcessRateLimiter,
    RateLimiter,
    RateLimits,
    Reservation,
)
from hopindex.backends.llm.ratelimit_redis import RedisRateLimiter
from hopindex.backends.llm.runner import LlmRunner, item_failure
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigError,
    HopindexError,
    LlmAuthenticationError,
    LlmOutputError,
    LlmUnavailableError,
    PermanentStageError,
    RetryableStageError,
)
from hopindex.monitoring.llm import PrometheusLlmObserver
from hopindex.testing.llm_limits import Endpoint, Outcome
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer, running_llm_server
from hopindex.testing.redis_server import RedisServer, free_port
from tests.waiting import wait_until

MODEL = "hopindex-test-llm"
POISON = "Zzyzx-poisoned"
STAGE = "stage1"


def stage1_request(n: int, extra: str = "") -> ChatRequest:
    return ChatRequest(stage=STAGE, messages=(
        ("user", 'Extract every fact as "qa_pairs" and list "entities".\n'
                 f"Document: Person {n} was born in Town {n}. {extra}"),))


def qa_pairs(value: Any) -> list[dict[str, str]]:
    pairs: list[dict[str, str]] = value["qa_pairs"]
    return pairs


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[LlmTestServer]:
    config: LlmServerConfig = getattr(request, "param", LlmServerConfig(
        invalid_json_marker=POISON))
    with running_llm_server(config) as test_server:
        yield test_server


def runner_for(server: LlmTestServer, *, cache: Callable[[], ResponseCache | None] = lambda: None,
               limiter: Callable[[], RateLimiter] = lambda: InProcessRateLimiter(
                   RateLimits(requests_per_minute=None)),
               api_key: str = "k", max_attempts: int = 3) -> LlmRunner:
    """A runner whose client is built on the runner's loop, as in a worker."""
    settings = LlmSettings(base_url=server.base_url, model=MODEL, api_key=api_key,
                           timeout_s=10.0, max_attempts=max_attempts, backoff_base_s=0.01,
                           backoff_max_s=0.05)
    return LlmRunner(lambda: LlmClient(settings, limiter(), cache(),
                                       observer=PrometheusLlmObserver()), concurrency=4)


class ReconcilesAfter:
    """A limiter whose ``reconcile`` waits for ``ready`` first: the reply of a call in
    flight reaches it only once the test has done what it must do meanwhile, however
    late the test's thread runs on a busy machine (the reply's latency is no bound)."""

    def __init__(self, inner: RateLimiter, ready: threading.Event) -> None:
        self._inner, self._ready = inner, ready

    async def acquire(self, key: str, estimated_tokens: int) -> Reservation:
        return await self._inner.acquire(key, estimated_tokens)

    async def reconcile(self, reservation: Reservation, actual_tokens: int) -> None:
        await asyncio.to_thread(wait_until, self._ready.is_set,
                                what="the test to finish its step before reconcile")
        await self._inner.reconcile(reservation, actual_tokens)

    async def penalize(self, key: str, retry_after_s: float) -> None:
        await self._inner.penalize(key, retry_after_s)

    async def close(self) -> None:
        await self._inner.close()


def cache_errors(operation: str) -> float:
    return REGISTRY.get_sample_value("hopindex_llm_cache_errors_total",
                                     {"stage": STAGE, "operation": operation}) or 0.0


def full_sqlite_cache(path: Path) -> SqliteResponseCache:
    """A real SQLite cache that can take no more rows: SQLite's own 'database or disk is
    full', as on a full disk, from every write that needs a page."""
    cache = SqliteResponseCache(path)
    asyncio.run(cache.put_response("filler", "x" * 3_900))  # fills the table's one leaf page
    with cache._db.transaction("cap", write=False) as conn:  # the test's hook into the file
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
    return cache


def test_item_failure_is_decided_by_the_error_type() -> None:
    """Invalid replies, 4xx refusals and a provider failing past the client's attempts
    fail their item; the cache, limiter, state or broker failing, a config error or a bug
    never do."""
    for error in (LlmOutputError("x"), PermanentStageError("x"), LlmUnavailableError("x")):
        assert item_failure(error) is error
    for other in (BackendUnavailableError("x"), BackendError("x"), RetryableStageError("x"),
                  ConfigError("x"), LlmAuthenticationError("x"), HopindexError("x"),
                  ValueError("x")):
        assert item_failure(other) is None


def test_item_errors_stay_in_their_place(server: LlmTestServer) -> None:
    """A reply invalid after its repair and a request the provider refuses (400) fail
    their own item; the other items of the batch succeed."""
    runner = runner_for(server)
    try:
        refused = ChatRequest(stage=STAGE, max_tokens=0, messages=stage1_request(2).messages)
        outcomes = runner.complete_json_many(
            [stage1_request(0), stage1_request(1, POISON), refused, stage1_request(3)],
            qa_pairs, UsageMeter())
    finally:
        runner.close()
    assert isinstance(outcomes[0], list) and isinstance(outcomes[3], list)
    assert isinstance(outcomes[1], LlmOutputError)
    assert isinstance(outcomes[2], PermanentStageError)
    assert "400" in str(outcomes[2])


@pytest.mark.parametrize("server", [LlmServerConfig(fail_500=1.0)], indirect=True)
def test_a_provider_failing_past_the_attempts_fails_its_items(server: LlmTestServer) -> None:
    """The provider answering 500 to every attempt fails each item in its place (the item
    is remembered and planned again later), not the task."""
    runner = runner_for(server, max_attempts=2)
    try:
        outcomes = runner.complete_json_many([stage1_request(0), stage1_request(1)], qa_pairs,
                                             UsageMeter())
    finally:
        runner.close()
    assert all(isinstance(o, LlmUnavailableError) for o in outcomes)
    assert server.stats.count(Endpoint.CHAT, Outcome.SERVER_ERROR) == 4


def test_an_unreachable_limiter_retries_the_task_instead_of_failing_items(
        server: LlmTestServer) -> None:
    """The limiter's Redis refusing connections raises one retryable error for the batch
    (the task retries), where every item used to fail with it; no call is made unadmitted."""
    url = f"redis://127.0.0.1:{free_port()}/0"
    runner = runner_for(server, limiter=lambda: RedisRateLimiter(url, RateLimits(None)))
    try:
        with pytest.raises(BackendUnavailableError, match="rate limiter Redis") as caught:
            runner.complete_json_many([stage1_request(0), stage1_request(1)], qa_pairs,
                                      UsageMeter())
    finally:
        runner.close()
    assert caught.value.retryable
    assert server.stats.count(Endpoint.CHAT) == 0


def test_an_unreachable_cache_is_a_miss_and_every_reply_is_kept(
        server: LlmTestServer) -> None:
    """The cache's Redis refusing connections: each read counts as a miss, each write
    failure is logged and counted, and every item gets its reply."""
    url = f"redis://127.0.0.1:{free_port()}/0"
    gets, puts = cache_errors("get"), cache_errors("put")
    runner = runner_for(server, cache=lambda: RedisResponseCache(url))
    usage = UsageMeter()
    try:
        with capture_logs() as logs:
            outcomes = runner.complete_json_many([stage1_request(n) for n in range(3)],
                                                 qa_pairs, usage)
    finally:
        runner.close()
    assert all(isinstance(o, list) and o for o in outcomes)
    assert usage.total().calls == server.stats.count(Endpoint.CHAT, Outcome.OK) == 3
    assert (cache_errors("get") - gets, cache_errors("put") - puts) == (3, 3)
    events = [e["event"] for e in logs]
    assert events.count("llm_cache_read_failed") == events.count("llm_cache_write_failed") == 3


def test_a_full_cache_disk_keeps_every_paid_reply(server: LlmTestServer,
                                                   tmp_path: Path) -> None:
    """'database or disk is full' on every cache write after a successful call: the
    replies are returned (items succeed), each failure logged with the error and counted."""
    puts = cache_errors("put")
    cache = full_sqlite_cache(tmp_path / "cache.sqlite3")
    runner = runner_for(server, cache=lambda: cache)
    try:
        with capture_logs() as logs:
            outcomes = runner.complete_json_many([stage1_request(n) for n in range(4)],
                                                 qa_pairs, UsageMeter())
    finally:
        runner.close()
    assert all(isinstance(o, list) and o for o in outcomes)
    failed = [e for e in logs if e["event"] == "llm_cache_write_failed"]
    assert len(failed) == 4 and cache_errors("put") - puts == 4
    assert all("database or disk is full" in e["error"] and e["stage"] == STAGE for e in failed)


def test_a_closed_cache_file_neither_fails_nor_hides_items(server: LlmTestServer,
                                                            tmp_path: Path) -> None:
    """Reads and writes of an SQLite cache that cannot be used at all (closed under the
    client) cost the cache, not the items: replies come from the provider, and an invalid
    reply still fails its own item."""
    cache = SqliteResponseCache(tmp_path / "cache.sqlite3")
    asyncio.run(cache.close())
    runner = runner_for(server, cache=lambda: cache)
    try:
        outcomes = runner.complete_json_many([stage1_request(0), stage1_request(1, POISON)],
                                             qa_pairs, UsageMeter())
    finally:
        runner.close()
    assert isinstance(outcomes[0], list)
    assert isinstance(outcomes[1], LlmOutputError)


@pytest.mark.parametrize("server", [LlmServerConfig(api_key="right")], indirect=True)
def test_a_refused_key_is_raised_for_the_batch(server: LlmTestServer) -> None:
    """A refused API key concerns every item: raised, never recorded per item."""
    runner = runner_for(server, api_key="wrong")
    try:
        with pytest.raises(LlmAuthenticationError):
            runner.complete_json_many([stage1_request(0), stage1_request(1)], qa_pairs,
                                      UsageMeter())
    finally:
        runner.close()


@pytest.mark.integration
@pytest.mark.parametrize("server", [LlmServerConfig(latency_s=0.5)], indirect=True)
def test_the_limiter_going_away_during_a_call_keeps_its_reply(server: LlmTestServer,
                                                             tmp_path: Path) -> None:
    """Redis stops while a call is in flight: the reply cannot be reconciled with the
    shared budget, which is logged, and the reply is kept (and cached) all the same."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    with RedisServer() as redis_server:
        limits = RateLimits(requests_per_minute=6_000, tokens_per_minute=1_000_000)
        stopped = threading.Event()
        runner = runner_for(server, cache=lambda: SqliteResponseCache(tmp_path / "c.sqlite3"),
                            limiter=lambda: ReconcilesAfter(
                                RedisRateLimiter(redis_server.url, limits), stopped))
        failures: list[BaseException] = []

        def stop_when_called() -> None:
            try:
                wait_until(lambda: server.stats.by_kind, what="the call to reach the server")
            except BaseException as exc:  # the thread reports it to the test
                failures.append(exc)
            finally:
                redis_server.stop()
                stopped.set()

        stopper = threading.Thread(target=stop_when_called)
        stopper.start()
        try:
            with capture_logs() as logs:
                outcomes = runner.complete_json_many([stage1_request(0)], qa_pairs,
                                                     UsageMeter())
        finally:
            stopper.join()
            runner.close()
    assert not failures, failures
    assert isinstance(outcomes[0], list) and outcomes[0]
    assert any(e["event"] == "llm_limiter_reconcile_failed" for e in logs)
    again = runner_for(server, cache=lambda: SqliteResponseCache(tmp_path / "c.sqlite3"))
    usage = UsageMeter()
    try:
        assert again.complete_json_many([stage1_request(0)], qa_pairs, usage) == outcomes
    finally:
        again.close()
    assert usage.total().cache_hits == 1 and server.stats.count(Endpoint.CHAT) == 1
