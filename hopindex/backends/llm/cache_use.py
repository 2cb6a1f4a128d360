"""The LLM client's use of its response cache: a read that fails is a miss, a write
that fails is logged and counted, and each is reported to the client's observer."""

from __future__ import annotations

from hopindex.backends.llm.cache import ResponseCache
from hopindex.backends.llm.observer import CacheOperation, LlmObserver
from hopindex.core.errors import BackendError
from hopindex.core.logging import get_logger

log = get_logger("hopindex.backends.llm.client")


class ObservedCache:
    """``cache`` (None: no cache, every read a miss) as the client reads and writes it."""

    def __init__(self, cache: ResponseCache | None, observer: LlmObserver) -> None:
        self._cache = cache
        self._observer = observer

    async def read(self, stage: str, key: str) -> str | None:
        """The cached reply, or None on a miss.

        A cache that cannot answer counts as a miss: the call it would have saved can
        still be made and gives the same reply, whereas retrying the task would throw
        away the paid replies of the other calls of its batch (whose writes fail in the
        same outage) and stall every task on a cache that may be broken for good (a
        corrupt file). The cost, a repeat of a call already paid for, shows in the
        log and in ``hopindex_llm_cache_errors_total``.
        """
        if self._cache is None:
            return None
        try:
            cached = await self._cache.get_response(key)
        except BackendError as exc:
            self._observer.observe_cache_error(stage, CacheOperation.GET)
            log.warning("llm_cache_read_failed", stage=stage, error=str(exc))
            return None
        self._observer.observe_cache(stage, hit=cached is not None)
        return cached

    async def write(self, stage: str, key: str, content: str) -> None:
        """Cache a reply; one that cannot be stored (a full disk, Redis away) is kept by
        the caller all the same: it was paid for, and it is the right answer."""
        if self._cache is None:
            return
        try:
            await self._cache.put_response(key, content)
        except BackendError as exc:
            self._observer.observe_cache_error(stage, CacheOperation.PUT)
            log.warning("llm_cache_write_failed", stage=stage, error=str(exc))

    async def close(self) -> None:
        if self._cache is not None:
            await self._cache.close()
