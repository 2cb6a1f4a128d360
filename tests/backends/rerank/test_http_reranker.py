"""``HttpReranker`` against the local test server's ``/rerank``: both wire shapes give
the server's scores in the order the texts were sent; 429s, 500s and hangs are
retried to the same scores, or fail as a retryable ``RerankError`` once the attempts
or the call's time are spent; a refused request or key fails at once; the score cache
spares the second request; the rate limiter is shared through Redis; every request
is reported to the observer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hopindex.backends.llm.cache import SqliteResponseCache
from hopindex.backends.protocols import Reranker
from hopindex.backends.registry import open_reranker
from hopindex.backends.rerank.http_reranker import HttpReranker, RerankHttpConfig
from hopindex.backends.rerank.observer import CacheOperation, RerankOutcome
from hopindex.core.errors import BackendError, RerankError
from hopindex.core.settings import CacheMode, RerankApi, Settings
from hopindex.testing.contracts.reranker import (
    QUERY,
    TEXTS,
    RecordingRerankObserver,
    RerankerContract,
)
from hopindex.testing.llm_limits import Endpoint, LlmServerConfig, Outcome
from hopindex.testing.llm_server import LlmTestServer, running_llm_server
from hopindex.testing.rerank_api import relevance
from tests.redis_server import redis_url, unique_key  # noqa: F401  # redis_url: a fixture
from tests.waiting import wait_until

MODEL = "rerank-test"
# Where each wire's services answer: vLLM and Jina under /v1, TEI at the root.
PATHS = {RerankApi.COHERE: "/v1/rerank", RerankApi.TEI: "/rerank"}


def config_for(server: LlmTestServer, api: RerankApi = RerankApi.COHERE,
               **overrides: object) -> RerankHttpConfig:
    """Retries back off in milliseconds so that fault tests stay fast."""
    values: dict[str, object] = {"url": server.root_url + PATHS[api], "api": api,
                                 "model": MODEL, "timeout_s": 10.0, "max_attempts": 3,
                                 "backoff_base_s": 0.01, "backoff_max_s": 0.05}
    values.update(overrides)
    return RerankHttpConfig(**values)  # type: ignore[arg-type]


@pytest.fixture
def rerankers() -> Iterator[list[HttpReranker]]:
    """The rerankers a test opens, closed at its end."""
    opened: list[HttpReranker] = []
    yield opened
    for reranker in opened:
        reranker.close()


def opened(rerankers: list[HttpReranker], server: LlmTestServer, *,
           api: RerankApi = RerankApi.COHERE, observer: RecordingRerankObserver | None = None,
           **overrides: object) -> HttpReranker:
    reranker = HttpReranker(config_for(server, api, **overrides), observer=observer)
    rerankers.append(reranker)
    return reranker


def rerank_requests(server: LlmTestServer, outcome: Outcome | None = None) -> int:
    return server.stats.count(Endpoint.RERANK, outcome)


@pytest.fixture(scope="module")
def server() -> Iterator[LlmTestServer]:
    with running_llm_server() as clean:
        yield clean


class TestCohereWire(RerankerContract):
    expected_model_name = MODEL

    @pytest.fixture
    def reranker(self, server: LlmTestServer,
                 observer: RecordingRerankObserver) -> Iterator[Reranker]:
        reranker = HttpReranker(config_for(server, RerankApi.COHERE), observer=observer)
        yield reranker
        reranker.close()


class TestTeiWire(RerankerContract):
    expected_model_name = MODEL

    @pytest.fixture
    def reranker(self, server: LlmTestServer,
                 observer: RecordingRerankObserver) -> Iterator[Reranker]:
        reranker = HttpReranker(config_for(server, RerankApi.TEI), observer=observer)
        yield reranker
        reranker.close()


@pytest.mark.parametrize("api", list(RerankApi))
def test_scores_are_the_services_in_the_order_sent(api: RerankApi,
                                                  rerankers: list[HttpReranker]) -> None:
    """Each wire's reply (sorted by score by the service) comes back as one score per
    text in the order sent: the server's word-overlap relevance of each."""
    with running_llm_server() as fresh:
        scores = opened(rerankers, fresh, api=api).rerank_texts(QUERY, list(TEXTS))
        assert scores == [relevance(QUERY, text) for text in TEXTS]
        assert scores != sorted(scores, reverse=True)  # the service's order was undone
        assert rerank_requests(fresh) == rerank_requests(fresh, Outcome.OK) == 1


def test_a_service_without_a_model_is_named_by_its_host(rerankers: list[HttpReranker],
                                                       server: LlmTestServer) -> None:
    """TEI serves one model and needs no name: its host and port stand for it."""
    reranker = opened(rerankers, server, api=RerankApi.TEI, model="")
    assert reranker.model_name == server.root_url.removeprefix("http://")
    assert reranker.rerank_texts(QUERY, [TEXTS[0]]) == [relevance(QUERY, TEXTS[0])]


def test_429s_and_500s_are_retried_to_the_clean_scores(rerankers: list[HttpReranker]) -> None:
    """With a seeded share of 429s and 500s every call still gets the scores a clean
    server gives; the server counted the retried requests, and the observer reported
    each request under the outcome the server gave it."""
    observer = RecordingRerankObserver()
    queries = [f"{QUERY} {n}" for n in range(12)]
    with running_llm_server(LlmServerConfig(fail_429=0.3, fail_500=0.3, seed=7)) as faulty:
        reranker = opened(rerankers, faulty, observer=observer, max_attempts=20)
        for query in queries:
            assert reranker.rerank_texts(query, list(TEXTS)) == [
                relevance(query, text) for text in TEXTS]
        refused = rerank_requests(faulty, Outcome.RATE_LIMITED)
        failed = rerank_requests(faulty, Outcome.SERVER_ERROR)
        assert refused > 0 and failed > 0
        assert rerank_requests(faulty, Outcome.OK) == len(queries)
        outcomes = observer.outcomes()
        assert outcomes.count(RerankOutcome.RATE_LIMITED) == refused
        assert outcomes.count(RerankOutcome.SERVER_ERROR) == failed
        assert outcomes.count(RerankOutcome.OK) == len(queries)
        # One limiter admission per request sent.
        assert len(observer.waits) == len(outcomes)


def test_every_attempt_failing_is_a_retryable_error(rerankers: list[HttpReranker]) -> None:
    """A service failing every attempt: a retryable ``RerankError`` naming the last
    failure, after exactly the configured attempts."""
    with running_llm_server(LlmServerConfig(fail_500=1.0)) as failing:
        with pytest.raises(RerankError, match=r"failed 3 of 3 attempts.*500") as caught:
            opened(rerankers, failing, max_attempts=3).rerank_texts(QUERY, list(TEXTS))
        assert caught.value.retryable
        assert rerank_requests(failing) == rerank_requests(failing, Outcome.SERVER_ERROR) == 3


def test_a_retry_after_past_the_calls_time_fails_at_once(rerankers: list[HttpReranker]) -> None:
    """A 429 asking for longer than the call has left fails it at once, retryable, rather
    than stall the query; the limiter is held back, so the next call fails too without
    sending anything."""
    config = LlmServerConfig(fail_429=1.0, fault_retry_after_s=120.0)
    with running_llm_server(config) as limited:
        reranker = opened(rerankers, limited, timeout_s=1.0, max_attempts=3)
        with pytest.raises(RerankError, match="passes the") as caught:
            reranker.rerank_texts(QUERY, list(TEXTS))
        assert caught.value.retryable
        assert rerank_requests(limited) == 1
        with pytest.raises(RerankError, match="rate limiter held the call") as held:
            reranker.rerank_texts(QUERY, list(TEXTS))
        assert held.value.retryable
        assert rerank_requests(limited) == 1


def test_a_refused_request_fails_at_once(rerankers: list[HttpReranker],
                                         server: LlmTestServer) -> None:
    """A 400 is not retried: one request, and an error naming the status and the
    service's own message."""
    observer = RecordingRerankObserver()
    before = rerank_requests(server, Outcome.BAD_REQUEST)
    with pytest.raises(RerankError, match=r"rejected the request \(400\): query must be") as caught:
        opened(rerankers, server, observer=observer).rerank_texts("", ["a text"])
    assert not caught.value.retryable
    assert rerank_requests(server, Outcome.BAD_REQUEST) == before + 1
    assert observer.outcomes() == [RerankOutcome.REJECTED]


def test_a_refused_key_fails_at_once_naming_the_setting(rerankers: list[HttpReranker]) -> None:
    """401 with a wrong key, or none: one request each, not retryable, the message
    naming HOPINDEX_RERANK_API_KEY; the right key is served."""
    with running_llm_server(LlmServerConfig(api_key="right-key")) as guarded:
        with pytest.raises(RerankError, match=r"refused the key.*HOPINDEX_RERANK_API_KEY") as bad:
            opened(rerankers, guarded, api_key="wrong-key").rerank_texts(QUERY, [TEXTS[0]])
        assert not bad.value.retryable
        with pytest.raises(RerankError, match="asks for a key and none is set"):
            opened(rerankers, guarded).rerank_texts(QUERY, [TEXTS[0]])
        assert rerank_requests(guarded) == rerank_requests(guarded, Outcome.UNAUTHORIZED) == 2
        good = opened(rerankers, guarded, api_key="right-key")
        assert good.rerank_texts(QUERY, [TEXTS[0]]) == [relevance(QUERY, TEXTS[0])]


def test_a_hanging_service_times_out_as_the_settings_say(tmp_path: Path) -> None:
    """HOPINDEX_RERANK_TIMEOUT_S bounds each attempt: a service that never answers
    fails the call, retryable, after at most HOPINDEX_RERANK_MAX_ATTEMPTS requests."""
    with running_llm_server(LlmServerConfig(fail_timeout=1.0)) as hanging:
        settings = Settings.from_env({
            "HOPINDEX_DATA_DIR": str(tmp_path), "HOPINDEX_RERANK_URL": hanging.root_url
            + "/v1/rerank", "HOPINDEX_RERANK_MODEL": MODEL, "HOPINDEX_RERANK_TIMEOUT_S": "0.3",
            "HOPINDEX_RERANK_MAX_ATTEMPTS": "2", "HOPINDEX_LLM_CACHE": "off"})
        reranker = open_reranker(settings)
        assert reranker is not None
        try:
            with pytest.raises(RerankError, match="no answer within") as caught:
                reranker.rerank_texts(QUERY, list(TEXTS))
        finally:
            reranker.close()
        assert caught.value.retryable
        # The server counts a hang when it starts one; the client may have given up
        # (and moved on) before the server read a request at all on a loaded machine.
        wait_until(lambda: rerank_requests(hanging, Outcome.TIMEOUT) >= 1,
                   what="the server to count a hanging request", timeout_s=30)
        assert rerank_requests(hanging) == rerank_requests(hanging, Outcome.TIMEOUT) <= 2


def test_the_cache_spares_the_second_request(rerankers: list[HttpReranker],
                                             tmp_path: Path) -> None:
    """The same query over the same texts is answered from the cache: no request, the
    same scores; other texts are a miss and a request."""
    observer = RecordingRerankObserver()
    with running_llm_server() as fresh:
        reranker = HttpReranker(config_for(fresh), observer=observer,
                                cache=lambda: SqliteResponseCache(tmp_path / "cache.sqlite3"))
        rerankers.append(reranker)
        first = reranker.rerank_texts(QUERY, list(TEXTS))
        assert reranker.rerank_texts(QUERY, list(TEXTS)) == first
        assert rerank_requests(fresh) == 1
        reranker.rerank_texts(QUERY, list(TEXTS[:2]))
        assert rerank_requests(fresh) == 2
        assert observer.cache == [False, True, False]
        assert observer.outcomes() == [RerankOutcome.OK, RerankOutcome.OK]


class BrokenCache:
    """A response cache whose every read and write fails."""

    async def get_response(self, key: str) -> str | None:
        raise BackendError("cache is away")

    async def put_response(self, key: str, content: str) -> None:
        raise BackendError("cache is away")

    async def close(self) -> None:
        return None


def test_a_failing_cache_costs_no_scores(rerankers: list[HttpReranker],
                                         server: LlmTestServer) -> None:
    """A cache that cannot be read is a miss, one that cannot be written is skipped:
    the scores come from the service all the same, and both failures are reported."""
    observer = RecordingRerankObserver()
    reranker = HttpReranker(config_for(server), observer=observer, cache=BrokenCache)
    rerankers.append(reranker)
    assert reranker.rerank_texts(QUERY, [TEXTS[0]]) == [relevance(QUERY, TEXTS[0])]
    assert observer.cache_errors == [CacheOperation.GET, CacheOperation.PUT]
    assert observer.outcomes() == [RerankOutcome.OK]


def test_the_requests_per_minute_budget_bounds_the_call(tmp_path: Path) -> None:
    """HOPINDEX_RERANK_REQUESTS_PER_MINUTE=1: the first call is admitted, the second
    would wait about a minute for the budget, longer than it has, so it fails at once
    without a request."""
    with running_llm_server() as fresh:
        settings = Settings(data_dir=tmp_path, rerank_url=fresh.root_url + "/v1/rerank",
                            rerank_model=unique_key(MODEL), rerank_timeout_s=0.5,
                            rerank_requests_per_minute=1, llm_cache=CacheMode.OFF).resolved()
        reranker = open_reranker(settings)
        assert reranker is not None
        try:
            reranker.rerank_texts(QUERY, [TEXTS[0]])
            with pytest.raises(RerankError, match="rate limiter held the call"):
                reranker.rerank_texts(QUERY, [TEXTS[1]])
        finally:
            reranker.close()
        assert rerank_requests(fresh) == 1


def test_a_429_holds_back_every_process_sharing_the_limiter(
        tmp_path: Path, redis_url: str) -> None:  # noqa: F811  # the imported fixture
    """Through the shared Redis (HOPINDEX_LLM_LIMITER_URL), the Retry-After one reranker
    was given holds back another one (another process's): it fails without a request."""
    config = LlmServerConfig(fail_429=1.0, fault_retry_after_s=120.0)
    with running_llm_server(config) as limited:
        settings = Settings(data_dir=tmp_path, rerank_url=limited.root_url + "/v1/rerank",
                            rerank_model=unique_key(MODEL), rerank_timeout_s=0.5,
                            llm_limiter_url=redis_url, llm_cache=CacheMode.OFF).resolved()
        first, second = open_reranker(settings), open_reranker(settings)
        assert first is not None and second is not None
        try:
            with pytest.raises(RerankError, match="passes the"):
                first.rerank_texts(QUERY, [TEXTS[0]])
            with pytest.raises(RerankError, match="rate limiter held the call"):
                second.rerank_texts(QUERY, [TEXTS[0]])
        finally:
            first.close()
            second.close()
        assert rerank_requests(limited) == 1
