"""A Redis that answers: the configured one, or a private ``redis-server`` started here.

Tests, benchmarks and CI may run where no Redis is up; they call
``running_redis`` instead of failing. The private server keeps nothing on disk
and stops when the context exits.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import redis

from hopindex.core.errors import BackendUnavailableError

START_TIMEOUT_S = 10.0


def redis_answers(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)
    try:
        return bool(client.ping())
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return False
    finally:
        client.close()


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def running_redis(url: str, *, database: int = 15) -> Iterator[tuple[str, bool]]:
    """``(url, started_here)``: ``url`` when it answers, else a private server's URL.

    Raises ``BackendUnavailableError`` when nothing answers and no ``redis-server``
    binary can be started.
    """
    if redis_answers(url):
        yield url, False
        return
    binary = shutil.which("redis-server")
    if binary is None:
        raise BackendUnavailableError(f"no Redis at {url} and no redis-server to start "
                                      "(Debian package redis-server)")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--daemonize", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    private_url = f"redis://127.0.0.1:{port}/{database}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not redis_answers(private_url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise BackendUnavailableError(f"redis-server on port {port} did not start")
            time.sleep(0.05)
        yield private_url, True
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
