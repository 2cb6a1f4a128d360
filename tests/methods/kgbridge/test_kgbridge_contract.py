"""kgbridge passes the index method contract over the Curie corpus, against the LLM
test server (its chat completions and embeddings)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hopindex.testing.contracts.index_method import IndexCase, IndexMethodContract
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.methods.test_index_contract import llm_case

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
        return llm_case("kgbridge", server, target=0)
