"""A real Redis for tests: the one already running, or a private ``redis-server``.

Import the fixture into a test module (``from tests.redis_server import redis_url``).
It tries ``HOPINDEX_TEST_REDIS_URL`` (default database 15 on localhost); when
nothing answers there, it starts ``redis-server`` on a free port without
persistence and stops it at the end of the session. Tests must use their own key
names (see ``unique_key``): the database may be shared.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from hopindex.testing.redis_server import redis_answers, running_redis

DEFAULT_URL = "redis://127.0.0.1:6379/15"
# Nothing listens on port 1: running_redis then starts a server of the caller's own.
_NOTHING_THERE = "redis://127.0.0.1:1/0"


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The URL of a Redis that answers, started for the session if need be."""
    url = os.environ.get("HOPINDEX_TEST_REDIS_URL", DEFAULT_URL)
    if not redis_answers(url) and shutil.which("redis-server") is None:
        pytest.skip(f"no Redis at {url} and no redis-server to start")
    with running_redis(url) as (answering, _):
        yield answering


def unique_key(prefix: str = "test") -> str:
    """A key no other test (or earlier run) uses."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@contextmanager
def private_redis_server() -> Iterator[str]:
    """The URL of a ``redis-server`` of the caller's own, stopped on exit: its queues and
    keys are shared with no other test, run or user. Skips the test when
    ``redis-server`` is not installed."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    with running_redis(_NOTHING_THERE, database=0) as (url, _):
        yield url
