"""An event loop on a daemon thread, for adapters whose client library is async-only.

The backend protocols are synchronous (Celery tasks and query methods call them),
while the Elasticsearch and Qdrant server clients are async and their connection
pools belong to the loop that created them. Each such adapter owns one
``LoopThread``: its client is built on that loop, and callers from any thread
submit coroutines to it and wait, so every thread of a process shares one pool.
This is the pattern of ``hopindex.backends.llm.runner``, without the LLM parts.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Generic, Protocol, TypeVar

from hopindex.core.errors import BackendError

T = TypeVar("T")
C = TypeVar("C", bound="AsyncClosable")

_STOP_TIMEOUT_S = 30.0


class LoopThread:
    """Runs coroutines on a private loop for synchronous callers on any thread."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """The coroutine's result (or exception), run on the loop thread."""
        if self._closed:
            coroutine.close()
            raise BackendError(f"{self._name}: the adapter is closed")
        if threading.current_thread() is self._thread:
            coroutine.close()
            # Waiting on our own loop from inside it would deadlock.
            raise RuntimeError(f"{self._name}: run() called from the loop thread")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout_s)
        except TimeoutError:
            future.cancel()
            raise

    def close(self, final: Coroutine[Any, Any, object] | None = None) -> None:
        """Run ``final`` (closing the client's sessions), then stop the loop. Idempotent."""
        if self._closed:
            if final is not None:
                final.close()
            return
        try:
            if final is not None:
                asyncio.run_coroutine_threadsafe(final, self._loop).result(_STOP_TIMEOUT_S)
        finally:
            self._closed = True
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(_STOP_TIMEOUT_S)
            self._loop.close()


class AsyncClosable(Protocol):
    async def close(self) -> None: ...


class ClientOnLoop(Generic[C]):
    """An async client on its own ``LoopThread``, built there by ``build`` (its sessions
    bind to the loop that runs them). After ``close`` the next ``run`` connects again, as
    the embedded adapters reopen their files."""

    def __init__(self, name: str, build: Callable[[], C]) -> None:
        self._name = name
        self._build = build
        self._lock = threading.Lock()
        self._loop, self.client = self._connect()

    def _connect(self) -> tuple[LoopThread, C]:
        loop = LoopThread(self._name)

        async def build() -> C:
            return self._build()

        return loop, loop.run(build())

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        with self._lock:
            if self._loop.closed:
                self._loop, self.client = self._connect()
            loop = self._loop
        return loop.run(coroutine, timeout_s)

    def close(self) -> None:
        with self._lock:
            if not self._loop.closed:
                self._loop.close(self.client.close())
