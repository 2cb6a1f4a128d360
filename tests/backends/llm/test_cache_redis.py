"""The Redis response cache against a real Redis: the ``ResponseCache`` contract, and the
prefix, TTL and outage behaviour every worker sharing it relies on."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import redis

from hopindex.backends.llm.cache import ResponseCache
from hopindex.backends.llm.cache_redis import RedisResponseCache
from hopindex.core.errors import BackendUnavailableError, ConfigError
from hopindex.core.ids import sha256_hex
from hopindex.testing.contracts.response_cache import OpenCache, ResponseCacheContract
from tests.redis_server import (
    redis_url,  # noqa: F401  # pytest fixture
    unique_key,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

KEY = sha256_hex("a prompt")


def prefix() -> str:
    return unique_key("hopindex-test-llm-cache") + ":"


class TestRedisResponseCache(ResponseCacheContract):
    """The ``ResponseCache`` contract; each test's caches share one fresh prefix, whose
    entries are deleted afterwards (the contract writes megabytes)."""

    @pytest.fixture
    def open_cache(self, redis_url: str) -> Iterator[OpenCache]:  # noqa: F811  # fixture imported above
        shared = prefix()

        def open_cache() -> ResponseCache:
            return RedisResponseCache(redis_url, prefix=shared)

        yield open_cache
        raw = redis.Redis.from_url(redis_url)
        try:
            for name in raw.scan_iter(match=f"{shared}*"):
                raw.delete(name)
        finally:
            raw.close()


def test_two_caches_on_one_url_share_entries(redis_url: str) -> None:  # noqa: F811  # fixture imported above
    """What one worker's cache writes, another worker's cache (same URL and prefix) reads;
    a different prefix sees nothing of it."""
    shared = prefix()

    async def scenario() -> tuple[str | None, str | None]:
        writer = RedisResponseCache(redis_url, prefix=shared)
        reader = RedisResponseCache(redis_url, prefix=shared)
        stranger = RedisResponseCache(redis_url, prefix=prefix())
        try:
            await writer.put_response(KEY, "from worker one")
            return await reader.get_response(KEY), await stranger.get_response(KEY)
        finally:
            for cache in (writer, reader, stranger):
                await cache.close()

    assert asyncio.run(scenario()) == ("from worker one", None)


def test_entries_live_under_the_prefix(redis_url: str) -> None:  # noqa: F811  # fixture imported above
    """The stored key is prefix + caller's key, so a raw client (or an operator) finds it."""
    own = prefix()

    async def scenario() -> None:
        cache = RedisResponseCache(redis_url, prefix=own)
        try:
            await cache.put_response(KEY, "reply")
        finally:
            await cache.close()

    asyncio.run(scenario())
    raw = redis.Redis.from_url(redis_url)
    try:
        assert raw.get(own + KEY) == b"reply"
        raw.delete(own + KEY)
    finally:
        raw.close()


def test_ttl_expires_entries_and_none_keeps_them(redis_url: str) -> None:  # noqa: F811  # fixture imported above
    """With ttl_s=1 Redis holds the entry at most a second, then it is a miss; without a
    TTL the entry has no expiry at all."""
    expiring, lasting = prefix(), prefix()

    async def write() -> None:
        short = RedisResponseCache(redis_url, prefix=expiring, ttl_s=1)
        forever = RedisResponseCache(redis_url, prefix=lasting)
        try:
            await short.put_response(KEY, "soon gone")
            await forever.put_response(KEY, "kept")
        finally:
            await short.close()
            await forever.close()

    async def read() -> str | None:
        cache = RedisResponseCache(redis_url, prefix=expiring, ttl_s=1)
        try:
            return await cache.get_response(KEY)
        finally:
            await cache.close()

    asyncio.run(write())
    raw = redis.Redis.from_url(redis_url)
    try:
        ttl_ms = int(raw.pttl(expiring + KEY))
        assert 0 < ttl_ms <= 1000
        assert raw.pttl(lasting + KEY) == -1  # -1: the key exists and never expires
        raw.delete(lasting + KEY)
        # Redis's clock, not ours, decides when the entry goes: wait until Redis says so
        # (EXISTS expires a key past its TTL), however late this process runs.
        wait_until(lambda: raw.exists(expiring + KEY) == 0, what="Redis to expire the entry")
    finally:
        raw.close()
    assert asyncio.run(read()) is None


def test_unreachable_redis_is_retryable_and_hides_the_password() -> None:
    """Nothing listening on the port: both operations raise BackendUnavailableError naming
    the host, never the password in the URL."""
    async def scenario(operation: str) -> None:
        cache = RedisResponseCache("redis://:s3cret@127.0.0.1:1/0")
        try:
            if operation == "get":
                await cache.get_response(KEY)
            else:
                await cache.put_response(KEY, "x")
        finally:
            await cache.close()

    for operation in ("get", "put"):
        with pytest.raises(BackendUnavailableError, match=r"127\.0\.0\.1:1") as caught:
            asyncio.run(scenario(operation))
        assert caught.value.retryable
        assert "s3cret" not in str(caught.value)


def test_ttl_below_one_second_is_a_config_error() -> None:
    """Redis expiries are whole seconds here; zero or negative is refused up front."""
    with pytest.raises(ConfigError, match="TTL"):
        RedisResponseCache("redis://127.0.0.1:1/0", ttl_s=0)
