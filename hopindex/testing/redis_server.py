"""A Redis that answers: the configured one, or a private ``redis-server`` started here.

Tests, benchmarks and CI may run where no Redis is up; they call
``running_redis`` instead of failing. The private server keeps nothing on disk
and stops when the context exits.

Fault tests that restart Redis under load use :class:`RedisServer` directly: it
keeps its port across a restart and, given a data directory, its data in an
append-only file, as a production Redis with ``appendonly yes`` would.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Self

import redis

from hopindex.core.errors import BackendUnavailableError

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0


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


class RedisServer:
    """A private ``redis-server`` on loopback that can be stopped and started again on the
    same port.

    Without ``data_dir`` it keeps nothing on disk. With one, every write goes to an
    append-only file there (fsync every second, Redis's default), so a restart brings
    back the queues, results and state as they were when it stopped.
    """

    def __init__(self, *, data_dir: Path | None = None, database: int = 15,
                 port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise BackendUnavailableError("no redis-server to start (Debian package "
                                          "redis-server)")
        self._binary = binary
        self.data_dir = data_dir
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/{database}"
        self._process: subprocess.Popen[bytes] | None = None

    def _argv(self) -> list[str]:
        argv = [self._binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--daemonize", "no"]
        if self.data_dir is None:
            return [*argv, "--appendonly", "no"]
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return [*argv, "--appendonly", "yes", "--appendfsync", "everysec",
                "--dir", str(self.data_dir)]

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> Self:
        """Start the server and wait until it answers (with AOF: until its data is loaded)."""
        if self.running:
            return self
        self._process = subprocess.Popen(self._argv(), stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not redis_answers(self.url):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise BackendUnavailableError(f"redis-server on port {self.port} did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        """SIGTERM, as an orderly shutdown or a container stop sends: Redis flushes the
        append-only file and exits; SIGKILL only if it does not within the timeout."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def restart(self, down_s: float = 0.0) -> None:
        """Stop, stay down ``down_s`` seconds (clients see refused connections), start."""
        self.stop()
        time.sleep(down_s)
        self.start()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


@contextlib.contextmanager
def running_redis(url: str, *, database: int = 15) -> Iterator[tuple[str, bool]]:
    """``(url, started_here)``: ``url`` when it answers, else a private server's URL.

    Raises ``BackendUnavailableError`` when nothing answers and no ``redis-server``
    binary can be started.
    """
    if redis_answers(url):
        yield url, False
        return
    if shutil.which("redis-server") is None:
        raise BackendUnavailableError(f"no Redis at {url} and no redis-server to start "
                                      "(Debian package redis-server)")
    with RedisServer(database=database) as server:
        yield server.url, True
