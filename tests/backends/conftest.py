"""Fixtures of the Redis state store tests: a fresh key prefix, a raw client, and a
store under that prefix that leaves nothing behind (the database may be shared).
A test module defining its own ``prefix`` or ``raw`` fixture overrides these."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from hopindex.backends.state.redis_connection import glob_escape
from hopindex.backends.state.redis_store import RedisStateStore
from tests.redis_server import (
    redis_url,  # noqa: F401  # pytest fixture
    unique_key,
)


@pytest.fixture
def prefix() -> str:
    return unique_key("hopindex-test")


@pytest.fixture
def raw(redis_url: str) -> Iterator[redis.Redis]:  # noqa: F811  # the imported fixture
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def redis_store(redis_url: str, prefix: str,  # noqa: F811  # the imported fixture
                raw: redis.Redis) -> Iterator[RedisStateStore]:
    store = RedisStateStore(redis_url, prefix=prefix)
    yield store
    store.close()
    leftovers = list(raw.scan_iter(match=f"{glob_escape(prefix)}:*", count=1000))
    if leftovers:
        raw.unlink(*leftovers)
