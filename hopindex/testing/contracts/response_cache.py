"""The ``ResponseCache`` contract: what every LLM response cache must do.

A cache's methods are coroutines and an instance may belong to the event loop it was
opened in (Redis), so each test opens its caches inside its own loop through the
``open_cache`` factory and closes them there. Every cache a factory opens sees the
same storage: that is how a re-run, or another worker, finds the replies already paid
for.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from hopindex.backends.llm.cache import ResponseCache, cache_key

T = TypeVar("T")

OpenCache = Callable[[], ResponseCache]

KEY = cache_key(model="contract-model", messages=[{"role": "user", "content": "a prompt"}],
                temperature=0.0, response_format="text", seed=None)
OTHER_KEY = cache_key(model="contract-model",
                      messages=[{"role": "user", "content": "another prompt"}],
                      temperature=0.0, response_format="text", seed=None)
# Accents, CJK, emoji, quotes, a tab and newlines: a reply is any text a model writes.
UNICODE = 'Marie Skłodowska-Curie — 居里夫人 🧪\n\t{"answer": "Warsaw", "note": "naïve"}\n'
# About 4 MiB of varied text: far more than one reply, so no size limit hides in an adapter.
LARGE = "".join(f"line {i}: {'αβγ xyz ' * 8}\n" for i in range(50_000))


def run_with(open_cache: OpenCache, scenario: Callable[[ResponseCache], Awaitable[T]]) -> T:
    """Open a cache in a fresh event loop, run ``scenario`` on it and close it."""
    async def main() -> T:
        cache = open_cache()
        try:
            return await scenario(cache)
        finally:
            await cache.close()

    return asyncio.run(main())


class ResponseCacheContract:
    """Subclass with an ``open_cache`` fixture: a factory opening a cache over storage
    fresh for the test and shared by every cache it opens."""

    @pytest.fixture
    def open_cache(self) -> OpenCache:
        raise NotImplementedError("the adapter's test class provides the open_cache fixture")

    def test_methods_are_coroutines(self, open_cache: OpenCache) -> None:
        """Every ``ResponseCache`` method exists on the adapter and is async, as the LLM
        client awaits them."""
        cache_type = type(run_with(open_cache, _identity))
        for name in ("get_response", "put_response", "close"):
            assert name in ResponseCache.__dict__
            assert inspect.iscoroutinefunction(getattr(cache_type, name)), name

    def test_miss_is_none(self, open_cache: OpenCache) -> None:
        """A key never written reads as None, not as an error or an empty string."""
        assert run_with(open_cache, lambda cache: cache.get_response(KEY)) is None

    def test_put_then_hit(self, open_cache: OpenCache) -> None:
        """A reply put under a key reads back exactly, and only under that key."""
        async def scenario(cache: ResponseCache) -> tuple[str | None, str | None]:
            await cache.put_response(KEY, "Warsaw")
            return await cache.get_response(KEY), await cache.get_response(OTHER_KEY)

        assert run_with(open_cache, scenario) == ("Warsaw", None)

    def test_overwrite_keeps_the_last_reply(self, open_cache: OpenCache) -> None:
        """Putting a key again replaces its reply: the newest answer is the one reused."""
        async def scenario(cache: ResponseCache) -> str | None:
            await cache.put_response(KEY, "first")
            await cache.put_response(KEY, "second")
            return await cache.get_response(KEY)

        assert run_with(open_cache, scenario) == "second"

    def test_empty_reply_is_a_hit(self, open_cache: OpenCache) -> None:
        """An empty reply reads back as the empty string, not as a miss that would pay
        for the call again."""
        async def scenario(cache: ResponseCache) -> str | None:
            await cache.put_response(KEY, "")
            return await cache.get_response(KEY)

        assert run_with(open_cache, scenario) == ""

    def test_unicode_round_trips(self, open_cache: OpenCache) -> None:
        """A reply with accents, CJK, emoji, tabs and newlines reads back unchanged."""
        async def scenario(cache: ResponseCache) -> str | None:
            await cache.put_response(KEY, UNICODE)
            return await cache.get_response(KEY)

        assert run_with(open_cache, scenario) == UNICODE

    def test_large_reply_round_trips(self, open_cache: OpenCache) -> None:
        """Megabytes of reply read back whole."""
        async def scenario(cache: ResponseCache) -> str | None:
            await cache.put_response(KEY, LARGE)
            return await cache.get_response(KEY)

        found = run_with(open_cache, scenario)
        assert found is not None
        assert len(found) == len(LARGE)
        assert found == LARGE

    def test_another_cache_over_the_same_storage_hits(self, open_cache: OpenCache) -> None:
        """What one cache wrote and closed, a cache opened later (another run, another
        worker) reads."""
        async def write(cache: ResponseCache) -> None:
            await cache.put_response(KEY, UNICODE)

        run_with(open_cache, write)
        assert run_with(open_cache, lambda cache: cache.get_response(KEY)) == UNICODE


async def _identity(cache: ResponseCache) -> ResponseCache:
    return cache
