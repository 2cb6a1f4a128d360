"""Which planned requests the response cache answers already, read without writing.

The key is the client's (``cache_key`` over the configured model and the request as
sent), so a hit here is a request the ingest would not send. A cache that cannot be
read counts every request as a miss, as the client does; an embedded cache file that
does not exist yet is not created just to find it empty.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

from hopindex.backends.llm.cache import ResponseCache, cache_key
from hopindex.backends.llm.chat import ChatRequest
from hopindex.backends.registry import open_response_cache
from hopindex.core.errors import HopindexError
from hopindex.core.logging import get_logger
from hopindex.core.settings import CacheMode, Settings, url_path

log = get_logger(__name__)


def request_key(model: str, request: ChatRequest) -> str:
    return cache_key(model=model, messages=request.as_messages(),
                     temperature=request.temperature,
                     response_format=request.response_format.value, seed=request.seed)


def cached_keys(settings: Settings, keys: Sequence[str]) -> set[str]:
    """The ``keys`` the response cache holds a reply for."""
    if not keys or settings.llm_cache is CacheMode.OFF or not _cache_exists(settings):
        return set()
    try:
        cache = open_response_cache(settings)
    except (HopindexError, OSError) as exc:
        log.warning("dry_run_cache_unreadable", error=str(exc))
        return set()
    if cache is None:
        return set()
    return _run(_lookup(cache, sorted(set(keys))))


def _cache_exists(settings: Settings) -> bool:
    # The path rule of backends.registry.open_response_cache: opening a SQLite cache
    # creates its file, which a dry run must not do.
    url = settings.shared_redis_url(settings.llm_cache_url)
    if url and urlsplit(url).scheme != "sqlite":
        return True
    path = url_path(url) if url else settings.data_dir / "llm-cache.sqlite3"
    return path.exists()


async def _lookup(cache: ResponseCache, keys: list[str]) -> set[str]:
    found: set[str] = set()
    try:
        for key in keys:
            if await cache.get_response(key) is not None:
                found.add(key)
    except (HopindexError, OSError) as exc:
        log.warning("dry_run_cache_unreadable", error=str(exc), read=len(found))
    finally:
        await cache.close()
    return found


def _run(coroutine: Coroutine[Any, Any, set[str]]) -> set[str]:
    # A caller on an event loop (an async test) cannot asyncio.run here: a thread can.
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
