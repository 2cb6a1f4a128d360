"""Rerank scores in the LLM response cache: the same query over the same texts costs
no second request (or model run).

The key is ``rerank:`` and a sha256 over the model, the wire (``cohere``, ``tei``,
``local``), the query and the texts in order, so it can never be one of the chat
keys (bare sha256 hex, ``backends/llm/cache.py``) and any change to what the
reranker would see is a miss. The value is the scores as a JSON list.

The stance is the LLM client's: a cache that cannot be read is a miss, and scores
that cannot be stored are returned all the same (logged and counted), since the
request they would save can still be made.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from hopindex.backends.llm.cache import ResponseCache
from hopindex.backends.rerank.observer import CacheOperation, RerankObserver
from hopindex.core.errors import BackendError
from hopindex.core.ids import sha256_hex
from hopindex.core.logging import get_logger

log = get_logger(__name__)

KEY_PREFIX = "rerank:"


def rerank_cache_key(*, model: str, wire: str, query: str, texts: Sequence[str]) -> str:
    payload = json.dumps({"model": model, "wire": wire, "query": query, "texts": list(texts)},
                         sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return KEY_PREFIX + sha256_hex(payload)


def _stored_scores(content: str, count: int) -> list[float] | None:
    """The scores a cache entry holds, or None when it is not ``count`` finite numbers
    (an entry written by something else: a miss, not an error)."""
    try:
        value = json.loads(content)
    except ValueError:
        return None
    if not isinstance(value, list) or len(value) != count:
        return None
    scores: list[float] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int | float) or not math.isfinite(item):
            return None
        scores.append(float(item))
    return scores


class ScoreCache:
    """The response cache (or none) seen as scores, reporting to ``observer``."""

    def __init__(self, cache: ResponseCache | None, observer: RerankObserver) -> None:
        self._cache = cache
        self._observer = observer

    async def get(self, key: str, count: int) -> list[float] | None:
        if self._cache is None:
            return None
        try:
            content = await self._cache.get_response(key)
        except BackendError as exc:
            self._observer.observe_cache_error(CacheOperation.GET)
            log.warning("rerank_cache_read_failed", error=str(exc))
            return None
        scores = None if content is None else _stored_scores(content, count)
        self._observer.observe_cache(hit=scores is not None)
        return scores

    async def put(self, key: str, scores: Sequence[float]) -> None:
        if self._cache is None:
            return
        try:
            await self._cache.put_response(key, json.dumps(list(scores)))
        except BackendError as exc:
            self._observer.observe_cache_error(CacheOperation.PUT)
            log.warning("rerank_cache_write_failed", error=str(exc))

    async def close(self) -> None:
        if self._cache is not None:
            await self._cache.close()
