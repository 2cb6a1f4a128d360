"""The distributed response cache: one Redis shared by every worker (docs/architecture.md).

The embedded ``SqliteResponseCache`` serves one machine; with several workers a
prompt answered by one must be a hit for all the others, or a re-run pays again
for every call another worker already made. Each entry is one string key,
``<prefix><sha256 key>``, holding the reply as UTF-8; an optional TTL lets Redis
evict old replies on its own instead of the cache growing without bound.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from hopindex.backends.llm.ratelimit_redis import public_url
from hopindex.core.errors import BackendError, BackendUnavailableError, ConfigError
from hopindex.core.logging import get_logger

log = get_logger(__name__)

DEFAULT_PREFIX = "hopindex:llm-cache:"
# A cache that cannot answer within this long should fail the call rather than
# stall every LLM request behind it.
SOCKET_TIMEOUT_S = 5.0

T = TypeVar("T")


class RedisResponseCache:
    """``ResponseCache`` over ``redis.asyncio``; one instance belongs to one event loop.

    ``ttl_s`` None keeps entries until Redis itself evicts them (its ``maxmemory``
    policy); a number of seconds expires each entry that long after it was written.
    """

    def __init__(self, url: str, *, ttl_s: int | None = None,
                 prefix: str = DEFAULT_PREFIX) -> None:
        if ttl_s is not None and ttl_s < 1:
            raise ConfigError(f"LLM cache TTL must be at least 1 second or None, got {ttl_s}")
        self.url = public_url(url)
        self._ttl_s = ttl_s
        self._prefix = prefix
        try:
            # No connection is made here: the first command connects, so a cache
            # configured for a Redis that is down fails at its first use, as a
            # retryable error, instead of at startup.
            self._client: aioredis.Redis = aioredis.Redis.from_url(
                url, socket_connect_timeout=SOCKET_TIMEOUT_S, socket_timeout=SOCKET_TIMEOUT_S)
        except ValueError as exc:  # redis-py's word for a malformed URL
            raise ConfigError(f"LLM cache Redis URL {self.url!r} is malformed: {exc}") from exc

    def _name(self, key: str) -> str:
        return f"{self._prefix}{key}"

    async def _run(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        try:
            return await call()
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            log.warning("llm_cache_unreachable", url=self.url, operation=what, error=str(exc))
            raise BackendUnavailableError(
                f"LLM cache Redis at {self.url} is unreachable ({what}): {exc}") from exc
        except RedisError as exc:
            raise BackendError(f"LLM cache Redis at {self.url} failed ({what}): {exc}") from exc

    async def get_response(self, key: str) -> str | None:
        value = await self._run("get", lambda: self._client.get(self._name(key)))
        if value is None:
            return None
        if isinstance(value, bytes):
            return value.decode("utf-8")
        return str(value)  # a client built with decode_responses already gives str

    async def put_response(self, key: str, content: str) -> None:
        # SET with EX in one command: a crash between a SET and an EXPIRE would
        # leave an entry that never expires.
        await self._run("put", lambda: self._client.set(
            self._name(key), content.encode("utf-8"), ex=self._ttl_s))

    async def close(self) -> None:
        await self._client.aclose()
