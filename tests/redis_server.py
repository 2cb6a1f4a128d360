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
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest
import redis

DEFAULT_URL = "redis://127.0.0.1:6379/15"
START_TIMEOUT_S = 10.0


def _answers(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)
    try:
        return bool(client.ping())
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return False
    finally:
        client.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The URL of a Redis that answers, started for the session if need be."""
    url = os.environ.get("HOPINDEX_TEST_REDIS_URL", DEFAULT_URL)
    if _answers(url):
        yield url
        return
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip(f"no Redis at {url} and no redis-server to start")
    port = _free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--daemonize", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/15"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(url):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server on port {port} did not start")
            time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def unique_key(prefix: str = "test") -> str:
    """A key no other test (or earlier run) uses."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"
