"""kgbridge passes the index method contract over the Curie corpus, against the LLM
test server (its chat completions and embeddings)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hopindex.testing.contracts.index_method import IndexCase, IndexMethodContract
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.conftest import CURIE_CORPUS

pytestmark = pytest.mark.integration


class TestKgBridgeIndexMethod(IndexMethodContract):
    @pytest.fixture(scope="class")
    def server(self) -> Iterator[LlmTestServer]:
        server = LlmTestServer(LlmServerConfig()).start_in_thread()
        yield server
        server.stop()

    @pytest.fixture
    def index_case(self, server: LlmTestServer) -> IndexCase:
        # Marie Curie: named in most documents, so a change re-adjudicates her pairs.
        return IndexCase(method="kgbridge", corpus=CURIE_CORPUS, target=0, settings={
            "llm_model": server.config.model, "llm_base_url": server.base_url,
            "llm_api_key": "test-key", "llm_backoff_base_s": 0.01,
            "llm_backoff_max_s": 0.05,
            "embedder_url": f"openai://{server.config.embedding_model}"})
