"""The async client of a ``/rerank`` service, with the LLM client's machinery around
each call: score cache → rate limiter → the request, with a timeout → retries with
jittered backoff on 429 (honouring Retry-After and holding back every process sharing
the limiter), 5xx, timeouts and connection errors. Each step is reported to a
``RerankObserver``.

It runs inside a query, so its policy is short and bounded: a call's attempts, its
waits for the limiter and its backoffs all fit in ``timeout_s * max_attempts`` from
its start; a wait that would pass that (a long Retry-After, a limiter held back)
fails the call at once, retryable, rather than stall the query. What fails is a
``RerankError``: retryable when the service could not answer in time, not when it
refused the request (4xx, a refused key) or answered scores that cannot be read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from hopindex.backends.llm.ratelimit import RateLimiter
from hopindex.backends.llm.retry import full_jitter_s, retry_after_s
from hopindex.backends.rerank.observer import RerankObserver, RerankOutcome
from hopindex.backends.rerank.scores_cache import ScoreCache, rerank_cache_key
from hopindex.backends.rerank.wire import (
    UnreadableScoresError,
    error_message,
    read_scores,
    request_body,
)
from hopindex.core.errors import BackendError, RerankError
from hopindex.core.logging import get_logger
from hopindex.core.redact import redact_url
from hopindex.core.settings import RerankApi, Settings

log = get_logger(__name__)

# Backoff between attempts: short, as a query is waiting. The LLM's settings are sized
# for ingest jobs (seconds to minutes) and would not fit in a rerank call's time.
BACKOFF_BASE_S = 0.1
BACKOFF_MAX_S = 1.0
# The pause a 429 without a usable Retry-After is taken to ask for.
DEFAULT_RETRY_AFTER_S = 1.0
_REFUSED_KEY = (401, 403)
_KEY_SETTING = "HOPINDEX_RERANK_API_KEY"


@dataclass(frozen=True, slots=True)
class RerankHttpConfig:
    """What one ``/rerank`` service client needs (``from_settings`` reads the settings)."""

    url: str
    api: RerankApi = RerankApi.COHERE
    model: str = ""
    api_key: str = field(default="", repr=False)
    timeout_s: float = 5.0
    max_attempts: int = 3
    backoff_base_s: float = BACKOFF_BASE_S
    backoff_max_s: float = BACKOFF_MAX_S

    @classmethod
    def from_settings(cls, settings: Settings) -> RerankHttpConfig:
        return cls(url=settings.rerank_url, api=settings.rerank_api, model=settings.rerank_model,
                   api_key=settings.rerank_api_key, timeout_s=settings.rerank_timeout_s,
                   max_attempts=settings.rerank_max_attempts)

    @property
    def model_name(self) -> str:
        """The model, or for a service named by its URL alone (TEI serves one model)
        its host and port: the metrics' and the cache's name for it."""
        return self.model or urlsplit(self.url).netloc.rpartition("@")[2]

    @property
    def budget_s(self) -> float:
        return self.timeout_s * self.max_attempts


def retryable_error(message: str) -> RerankError:
    """A ``RerankError`` worth retrying later: the service did not answer in time."""
    error = RerankError(message)
    error.retryable = True
    return error


@dataclass(frozen=True, slots=True)
class _Failed:
    """One attempt that may be retried: what went wrong, and the pause it asks for."""

    error: str
    retry_after_s: float | None = None


class AsyncRerankClient:
    """One service's client; build and use it on one event loop."""

    def __init__(self, config: RerankHttpConfig, limiter: RateLimiter, cache: ScoreCache,
                 observer: RerankObserver, *,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.config = config
        self._limiter = limiter
        self._cache = cache
        self._observer = observer
        # Keyed apart from the LLM's budgets, which are keyed by the chat model.
        self._limit_key = f"rerank:{config.model_name}"
        self._where = f"the rerank service at {redact_url(config.url)}"
        headers = {"Accept": "application/json"}
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        # Our retry loop decides; redirects are refused as a misconfigured URL would be.
        self._http = httpx.AsyncClient(headers=headers, transport=transport,
                                       follow_redirects=False)

    async def close(self) -> None:
        await self._http.aclose()
        await self._cache.close()
        await self._limiter.close()

    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score per text, in order; from the cache when these texts were scored."""
        if not texts:
            return []
        key = rerank_cache_key(model=self.config.model_name, wire=self.config.api.value,
                               query=query, texts=texts)
        cached = await self._cache.get(key, len(texts))
        if cached is not None:
            return cached
        body = request_body(self.config.api, self.config.model, query, texts)
        scores = await self._attempts(body, len(texts))
        await self._cache.put(key, scores)
        return scores

    async def _attempts(self, body: dict[str, object], count: int) -> list[float]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.budget_s
        last = _Failed("no attempt made")
        made = 0
        for attempt in range(1, self.config.max_attempts + 1):
            await self._admitted(deadline - loop.time())
            left_s = deadline - loop.time()
            if left_s <= 0:
                break
            made += 1
            outcome = await self._send(body, count, min(self.config.timeout_s, left_s))
            if not isinstance(outcome, _Failed):
                return outcome
            last = outcome
            if attempt == self.config.max_attempts:
                break
            delay_s = max(outcome.retry_after_s or 0.0, full_jitter_s(
                attempt, self.config.backoff_base_s, self.config.backoff_max_s))
            left_s = deadline - loop.time()
            if delay_s >= left_s:
                raise retryable_error(
                    f"{self._where}: {outcome.error}; the wait it asks for ({delay_s:.2f}s) "
                    f"passes the {max(left_s, 0.0):.2f}s left of the call's "
                    f"{self.config.budget_s:g}s (HOPINDEX_RERANK_TIMEOUT_S x "
                    f"HOPINDEX_RERANK_MAX_ATTEMPTS)")
            log.warning("rerank_call_retry", model=self.config.model_name, attempt=attempt,
                        error=outcome.error, delay_s=round(delay_s, 3))
            await asyncio.sleep(delay_s)
        raise retryable_error(f"{self._where} failed {made} of {self.config.max_attempts} "
                              f"attempts within {self.config.budget_s:g}s; last: {last.error}")

    async def _admitted(self, left_s: float) -> None:
        """The limiter's admission, waited for no longer than the call has left."""
        try:
            async with asyncio.timeout(max(left_s, 0.0)):
                reservation = await self._limiter.acquire(self._limit_key, 0)
        except TimeoutError:
            raise retryable_error(f"{self._where}: the rate limiter held the call past its "
                                  f"{self.config.budget_s:g}s (a Retry-After, or "
                                  "HOPINDEX_RERANK_REQUESTS_PER_MINUTE)") from None
        except BackendError as exc:  # the shared limiter's Redis is away
            raise retryable_error(f"{self._where}: the rate limiter failed: {exc}") from exc
        self._observer.observe_wait(self.config.model_name, reservation.waited_s)

    async def _send(self, body: dict[str, object], count: int,
                    timeout_s: float) -> list[float] | _Failed:
        started = time.perf_counter()
        try:
            # httpx's timeout bounds each read; this one the whole exchange.
            async with asyncio.timeout(timeout_s):
                response = await self._http.post(self.config.url, json=body, timeout=timeout_s)
        except (TimeoutError, httpx.TimeoutException):
            self._observe(RerankOutcome.TIMEOUT, started)
            return _Failed(f"no answer within {timeout_s:.2f}s")
        except httpx.RequestError as exc:  # refused, reset, unresolvable
            self._observe(RerankOutcome.SERVER_ERROR, started)
            return _Failed(f"{type(exc).__name__}: {exc}")
        if response.is_success:
            return self._scores(response, count, started)
        return await self._failure(response, started)

    def _scores(self, response: httpx.Response, count: int, started: float) -> list[float]:
        try:
            scores = read_scores(response.json(), count)
        except (ValueError, UnreadableScoresError) as exc:
            self._observe(RerankOutcome.UNREADABLE, started)
            raise RerankError(f"{self._where} answered scores that cannot be read: "
                              f"{exc}") from exc
        self._observe(RerankOutcome.OK, started)
        return scores

    async def _failure(self, response: httpx.Response, started: float) -> _Failed:
        """A retryable status as a ``_Failed``; any other raises ``RerankError`` at once."""
        status = response.status_code
        message = error_message(_json_or_none(response), response.text)
        if status == 429:
            self._observe(RerankOutcome.RATE_LIMITED, started)
            pause_s = retry_after_s(response.headers)
            pause_s = DEFAULT_RETRY_AFTER_S if pause_s is None else pause_s
            await self._penalize(pause_s)
            return _Failed(f"429 (retry after {pause_s:.2f}s): {message}", pause_s)
        if status >= 500:
            self._observe(RerankOutcome.SERVER_ERROR, started)
            return _Failed(f"{status}: {message}", retry_after_s(response.headers))
        if status in _REFUSED_KEY:
            self._observe(RerankOutcome.UNAUTHORIZED, started)
            refused = ("refused the key" if self.config.api_key
                       else "asks for a key and none is set")
            raise RerankError(f"{self._where} {refused} ({status}: {message}); check "
                              f"{_KEY_SETTING}")
        self._observe(RerankOutcome.REJECTED, started)
        raise RerankError(f"{self._where} rejected the request ({status}): {message}")

    async def _penalize(self, pause_s: float) -> None:
        """Hold back every process sharing the budget; when the limiter cannot take the
        hold, this call's own wait still honours the pause."""
        try:
            await self._limiter.penalize(self._limit_key, pause_s)
        except BackendError as exc:
            log.warning("rerank_limiter_penalize_failed", error=str(exc))

    def _observe(self, outcome: RerankOutcome, started: float) -> None:
        self._observer.observe_request(self.config.model_name, outcome,
                                       time.perf_counter() - started)


def _json_or_none(response: httpx.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return None
