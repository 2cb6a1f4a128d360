"""The Redis response cache against a real Redis: what every worker shares."""

from __future__ import annotations

import asyncio
import inspect

import pytest
import redis

from hopindex.backends.llm.cache import ResponseCache
from hopindex.backends.llm.cache_redis import RedisResponseCache
from hopindex.core.errors import BackendUnavailableError, ConfigError
from hopindex.core.ids import sha256_hex
from tests.redis_server import (
    redis_url,  # noqa: F401  # pytest fixture
    unique_key,
)

pytestmark = pytest.mark.integration

KEY = sha256_hex("a prompt")


def prefix() -> str:
    return unique_key("hopindex-test-llm-cache") + ":"


def test_has_the_protocol_methods_as_coroutines() -> None:
    """Every ``ResponseCache`` method exists and is async, as ``LlmClient`` awaits them."""
    for name in ("get_response", "put_response", "close"):
        assert name in ResponseCache.__dict__
        assert inspect.iscoroutinefunction(getattr(RedisResponseCache, name))


def test_miss_is_none(redis_url: str) -> None:  # noqa: F811  # fixture imported above
    """A key never written reads as None, not as an error or an empty string."""
    async def scenario() -> str | None:
        cache = RedisResponseCache(redis_url, prefix=prefix())
        try:
            return await cache.get_response(KEY)
        finally:
            await cache.close()

    assert asyncio.run(scenario()) is None


def test_put_then_get_round_trips_unicode(redis_url: str) -> None:  # noqa: F811  # fixture imported above
    """A reply with accents, CJK, emoji and newlines reads back exactly as written."""
    content = 'Marie Skłodowska-Curie — 居里夫人 🧪\n{"answer": "Warsaw"}'

    async def scenario() -> str | None:
        cache = RedisResponseCache(redis_url, prefix=prefix())
        try:
            await cache.put_response(KEY, content)
            return await cache.get_response(KEY)
        finally:
            await cache.close()

    assert asyncio.run(scenario()) == content


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
    finally:
        raw.close()
    asyncio.run(asyncio.sleep(ttl_ms / 1000 + 0.1))
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
