"""``CrossEncoderReranker``: a local sentence-transformers cross-encoder, on CPU, offline.

The model is read from a folder (``HOPINDEX_RERANK_MODEL_PATH``) and never fetched:
the Hugging Face hub is told to stay offline and the load is local-only, as the
embedder's is. A missing folder is refused when the reranker is opened; the model
loads on first use (its time counted as a load, ``embedder/loading.py``, so a query's
timings leave it out), and a folder that holds no loadable cross-encoder is a
``ConfigError`` then. A score is the model's prediction for the (query, text) pair,
its activation applied (a sigmoid for the usual one-label rerankers).

One lock covers the load and every prediction: a fast tokenizer refuses to be used by
two threads at once ("Already borrowed"), and torch already spreads one batch over
the cores. Scores are cached as a service's are (``scores_cache.py``); the cache is
async, so it runs on a loop of its own (``loop_thread.py``).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hopindex.backends.embedder.loading import loading
from hopindex.backends.llm.cache import ResponseCache
from hopindex.backends.loop_thread import ClientOnLoop
from hopindex.backends.rerank.observer import NullRerankObserver, RerankObserver, RerankOutcome
from hopindex.backends.rerank.scores_cache import ScoreCache, rerank_cache_key
from hopindex.core.errors import ConfigError, RerankError
from hopindex.core.logging import get_logger

log = get_logger(__name__)

SETTING = "HOPINDEX_RERANK_MODEL_PATH"
# The wire name in the cache key: scores of the local model, whatever its folder's name.
LOCAL_WIRE = "local"
# Pairs per forward pass: a query's candidates (HOPINDEX_RERANK_TOP_N, 20 by default)
# in one or two passes, without holding the attention maps of a hundred at once.
BATCH_PAIRS = 16


class CrossEncoderReranker:
    """Scores from the cross-encoder in ``folder``. ``cache`` builds the response
    cache (None: no cache, and no loop for it)."""

    def __init__(self, folder: Path | str, *,
                 cache: Callable[[], ResponseCache | None] | None = None,
                 observer: RerankObserver | None = None,
                 batch_size: int = BATCH_PAIRS) -> None:
        path = Path(folder).expanduser()
        if not path.is_dir():
            raise ConfigError(f"{SETTING}: {str(folder)!r} is not a folder holding a "
                              "cross-encoder model")
        self._folder = path.resolve()
        self._batch_size = batch_size
        self._observer = observer or NullRerankObserver()
        self._lock = threading.Lock()
        self._model: Any = None
        self._cache: ClientOnLoop[ScoreCache] | None = None
        if cache is not None:
            watcher = self._observer
            self._cache = ClientOnLoop("hopindex-rerank-cache",
                                       lambda: ScoreCache(cache(), watcher))

    @property
    def model_name(self) -> str:
        return self._folder.name

    @property
    def loaded(self) -> bool:
        with self._lock:
            return self._model is not None

    def load(self) -> None:
        """Load the model now (at start-up, say) rather than on the first query."""
        with self._lock:
            self._loaded()

    def rerank_texts(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        texts = list(texts)
        key = rerank_cache_key(model=str(self._folder), wire=LOCAL_WIRE, query=query,
                               texts=texts)
        cache = self._cache
        if cache is not None:
            cached = cache.run(_cache_get(cache, key, len(texts)))
            if cached is not None:
                return cached
        scores = self._predict(query, texts)
        if cache is not None:
            cache.run(_cache_put(cache, key, scores))
        return scores

    def _predict(self, query: str, texts: list[str]) -> list[float]:
        with self._lock:
            model = self._loaded()
            started = time.perf_counter()
            try:
                raw = model.predict([(query, text) for text in texts],
                                    batch_size=self._batch_size, show_progress_bar=False,
                                    convert_to_numpy=True)
                scores = [float(value) for value in raw.reshape(-1).tolist()]
            except Exception as exc:  # tokenizers and torch raise many unrelated types
                self._observe(RerankOutcome.FAILED, started)
                raise RerankError(f"the cross-encoder at {self._folder} failed: "
                                  f"{type(exc).__name__}: {exc}") from exc
        if len(scores) != len(texts) or not all(math.isfinite(s) for s in scores):
            self._observe(RerankOutcome.UNREADABLE, started)
            raise RerankError(f"the cross-encoder at {self._folder} gave {len(scores)} scores "
                              f"for {len(texts)} texts, or scores that are not finite")
        self._observe(RerankOutcome.OK, started)
        return scores

    def _observe(self, outcome: RerankOutcome, started: float) -> None:
        self._observer.observe_request(self.model_name, outcome, time.perf_counter() - started)

    def _loaded(self) -> Any:
        """The model, loaded on first use; the caller holds the lock."""
        if self._model is None:
            with loading():
                self._model = _load(self._folder)
            log.info("reranker_loaded", model=self.model_name, location=str(self._folder))
        return self._model

    def close(self) -> None:
        with self._lock:
            self._model = None
        if self._cache is not None:
            self._cache.close()


# The cache's client is read when the coroutine runs: after ``close`` the next call
# opens it again, as the service client does.
async def _cache_get(host: ClientOnLoop[ScoreCache], key: str, count: int) -> list[float] | None:
    return await host.client.get(key, count)


async def _cache_put(host: ClientOnLoop[ScoreCache], key: str, scores: list[float]) -> None:
    await host.client.put(key, scores)


def _load(folder: Path) -> Any:
    # Set before the import: huggingface_hub reads these once, and a service must never
    # reach for the network to resolve a model (the embedder does the same).
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import CrossEncoder
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # untyped API
        model = CrossEncoder(str(folder), device="cpu", local_files_only=True)
    except Exception as exc:  # torch and transformers raise many unrelated types
        raise ConfigError(f"{SETTING}: cannot load a cross-encoder from {folder}: "
                          f"{type(exc).__name__}: {exc}") from exc
    labels = int(getattr(model, "num_labels", 1))
    if labels != 1:
        raise ConfigError(f"{SETTING}: the model in {folder} has {labels} output labels; a "
                          "reranker has one (a relevance score)")
    return model
