"""``HttpReranker``: the ``Reranker`` over a ``/rerank`` service, for synchronous callers.

Query methods are synchronous while the limiter and the cache are async, so the
client (``http_client.py``) lives on a private event loop (``loop_thread.py``, as the
Qdrant and Elasticsearch server adapters do): callers on any thread submit to it and
wait, and every thread of a process shares its connections. The limiter and the cache
are built on that loop too, since a Redis connection belongs to the loop that made it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import httpx

from hopindex.backends.llm.cache import ResponseCache
from hopindex.backends.llm.ratelimit import InProcessRateLimiter, RateLimiter, RateLimits
from hopindex.backends.loop_thread import ClientOnLoop
from hopindex.backends.rerank.http_client import AsyncRerankClient, RerankHttpConfig
from hopindex.backends.rerank.observer import NullRerankObserver, RerankObserver
from hopindex.backends.rerank.scores_cache import ScoreCache

__all__ = ["HttpReranker", "RerankHttpConfig"]


def _unlimited() -> RateLimiter:
    return InProcessRateLimiter(RateLimits(requests_per_minute=None))


def _no_cache() -> ResponseCache | None:
    return None


class HttpReranker:
    """Scores from the service at ``config.url``.

    ``limiter`` and ``cache`` build the rate limiter and the response cache on the
    client's loop (default: an unlimited in-process limiter, no cache); ``transport``
    stands in for the network (tests).
    """

    def __init__(self, config: RerankHttpConfig, *,
                 limiter: Callable[[], RateLimiter] = _unlimited,
                 cache: Callable[[], ResponseCache | None] = _no_cache,
                 observer: RerankObserver | None = None,
                 transport: Callable[[], httpx.AsyncBaseTransport] | None = None) -> None:
        self.config = config
        watcher = observer or NullRerankObserver()

        def build() -> AsyncRerankClient:
            return AsyncRerankClient(config, limiter(), ScoreCache(cache(), watcher), watcher,
                                     transport=transport() if transport else None)

        self._host = ClientOnLoop("hopindex-rerank", build)

    @property
    def model_name(self) -> str:
        return self.config.model_name

    def rerank_texts(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        return self._host.run(self._rerank(query, list(texts)))

    async def _rerank(self, query: str, texts: list[str]) -> list[float]:
        # The client is read when the coroutine runs: one started after a reconnect
        # (a call after ``close``) gets the new client.
        return await self._host.client.rerank(query, texts)

    def close(self) -> None:
        self._host.close()
