"""Blocking calls (queries, the embedded engines, SQLite) run off the event loop.

One thread pool of ``HOPINDEX_API_CONCURRENCY`` threads bounds how much blocking
work the server does at once; calls beyond that wait their turn in its queue, so
a burst of queries slows down instead of exhausting the process.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class BlockingRunner:
    def __init__(self, threads: int, name: str = "hopindex-api") -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)

    async def run(self, func: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``func(*args, **kwargs)`` on a pool thread; the log context (request id)
        travels with it."""
        call = functools.partial(contextvars.copy_context().run, func, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
