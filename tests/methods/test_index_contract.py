"""The built-in index methods pass the index method contract over the Curie corpus:
extractive with no LLM configured (the default embedder), indexrag against the LLM
test server (its chat completions and embeddings)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hopindex.testing.contracts.index_method import IndexCase, IndexMethodContract
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.conftest import CURIE_CORPUS

pytestmark = pytest.mark.integration


class TestExtractiveIndexMethod(IndexMethodContract):
    @pytest.fixture
    def index_case(self) -> IndexCase:
        # Warsaw: a member of the Marie Curie, Poland and Warsaw bridges.
        return IndexCase(method="extractive", corpus=CURIE_CORPUS, target=2)


class TestIndexRagIndexMethod(IndexMethodContract):
    @pytest.fixture(scope="class")
    def server(self) -> Iterator[LlmTestServer]:
        server = LlmTestServer(LlmServerConfig()).start_in_thread()
        yield server
        server.stop()

    @pytest.fixture
    def index_case(self, server: LlmTestServer) -> IndexCase:
        # Marie Curie: a member of most bridging groups.
        return llm_case("indexrag", server, target=0)


def llm_case(method: str, server: LlmTestServer, target: int) -> IndexCase:
    """A case of ``method`` over the Curie corpus whose LLM and embeddings are the test
    server's, with short back-offs."""
    return IndexCase(method=method, corpus=CURIE_CORPUS, target=target, settings={
        "llm_model": server.config.model, "llm_base_url": server.base_url,
        "llm_api_key": "test-key", "llm_backoff_base_s": 0.01, "llm_backoff_max_s": 0.05,
        "embedder_url": f"openai://{server.config.embedding_model}"})
