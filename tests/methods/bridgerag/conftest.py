"""One ingested index per test module, the LLM test server, and a counting vector store.

Embeddings come from the test server (a hashed bag of words): the pipeline's
mechanics do not depend on the model, and the CPU model would only slow the tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.backends.protocols import UnitFilter, Vector, VectorRecord, VectorStore
from hopindex.core.models import Hit
from hopindex.core.settings import CacheMode, Settings
from hopindex.methods.base import SearchContext
from hopindex.methods.registry import get_index_method, method_settings
from hopindex.readers import RawDocument
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.conftest import CURIE_CORPUS, ingest_documents, llm_settings, local_client

PASSAGES = "hotpot"  # an extractive index: passages and extractive bridges
FACTS = "curie"  # an IndexRAG index: AKUs and bridging facts, no passages
EMPTY = "empty"
QUESTIONS_USED = 8


class CountingVectorStore:
    """The real adapter, each ``search_vectors`` call counted."""

    def __init__(self, inner: VectorStore, *, lose_vectors: bool = False) -> None:
        self.inner = inner
        self.searches = 0
        self.lose_vectors = lose_vectors  # get_vectors finds nothing, as after a lost write

    def ensure_index(self, index: str, dimension: int) -> None:
        self.inner.ensure_index(index, dimension)

    def upsert_vectors(self, index: str, records: Sequence[VectorRecord]) -> None:
        self.inner.upsert_vectors(index, records)

    def delete_vectors(self, index: str, unit_ids: Sequence[str]) -> None:
        self.inner.delete_vectors(index, unit_ids)

    def search_vectors(self, index: str, vector: Vector, k: int,
                       unit_filter: UnitFilter | None = None) -> list[Hit]:
        self.searches += 1
        return self.inner.search_vectors(index, vector, k, unit_filter)

    def count_vectors(self, index: str) -> int:
        return self.inner.count_vectors(index)

    def get_vectors(self, index: str, unit_ids: Sequence[str]) -> list[VectorRecord]:
        return [] if self.lose_vectors else self.inner.get_vectors(index, unit_ids)

    def drop_index(self, index: str) -> None:
        self.inner.drop_index(index)

    def close(self) -> None:
        self.inner.close()


def hotpot_questions(limit: int = QUESTIONS_USED) -> list[dict[str, Any]]:
    with as_file(files("hopindex") / "sample" / "hotpotqa-100" / "questions.json") as path:
        records: list[dict[str, Any]] = json.loads(path.read_text())
    return records[:limit]


def hotpot_documents(records: list[dict[str, Any]]) -> list[RawDocument]:
    """The context paragraphs of ``records``, each once."""
    paragraphs = {title: "".join(sentences) for r in records for title, sentences in r["context"]}
    return [RawDocument(doc_id=None, title=t, text=x, metadata={}, origin=t)
            for t, x in paragraphs.items()]


def bridgerag_settings(data_dir: Path, server: LlmTestServer, **overrides: object) -> Settings:
    """LLM mode against the test server, its embeddings, and no response cache: every
    query's calls reach the server, so its counters count them."""
    values: dict[str, object] = {"embedder_url": f"openai://{server.config.embedding_model}",
                                 "llm_cache": CacheMode.OFF}
    values.update(overrides)
    return llm_settings(data_dir, server, **values)


@dataclass
class Env:
    server: LlmTestServer
    client: LocalClient
    questions: list[dict[str, Any]]

    def context(self, **changes: Any) -> SearchContext:
        """The service's search context with the vector store wrapped for counting
        (and any field replaced: another LLM runner, tasks, settings)."""
        b = self.client.service.backends
        settings = self.client.settings
        fields: dict[str, Any] = {
            "vectors": CountingVectorStore(b.vectors), "keywords": b.keywords,
            "units": b.state, "documents": b.state, "indexes": b.state,
            "embedder": b.embedder, "llm": b.llm, "settings": settings,
            "read_settings": lambda name: method_settings(settings, name),
            "index_kinds": lambda index: get_index_method(
                b.state.get_index(index).method).writes}  # type: ignore[union-attr]
        fields.update(changes)
        return SearchContext(**fields)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    data_dir = tmp_path_factory.mktemp("bridgerag")
    client = local_client(bridgerag_settings(data_dir, server))
    try:
        records = hotpot_questions()
        jobs = [ingest_documents(client, PASSAGES, hotpot_documents(records),
                                 method="extractive"),
                ingest_documents(client, FACTS, CURIE_CORPUS, method="indexrag"),
                ingest_documents(client, EMPTY, [], method="extractive")]
        assert all(not job.errors for job in jobs), [job.errors for job in jobs]
        yield Env(server=server, client=client, questions=records)
    finally:
        client.close()
        server.stop()
