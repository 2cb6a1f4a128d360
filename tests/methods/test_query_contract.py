"""Every registered query method passes the query method contract over small indexes of
the Curie corpus: with the LLM test server configured, over an index of every index
method; with no LLM configured, the methods that need none over the indexes built
without one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import JobState
from hopindex.core.settings import Settings
from hopindex.methods.plugin import LlmUse
from hopindex.methods.registry import (
    get_index_method,
    get_query_method,
    index_method_names,
    query_method_names,
)
from hopindex.readers import ReadResult
from hopindex.testing.contracts.query_method import (
    IndexFactory,
    QueryMethodContract,
    QueryTarget,
)
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.conftest import CURIE_CORPUS
from tests.methods.indexrag.conftest import llm_settings, local_client

pytestmark = pytest.mark.integration

QUESTION = "Where was the wife of Pierre Curie born?"


def index_builder(client: LocalClient) -> IndexFactory:
    def build(index_method: str) -> QueryTarget:
        index = f"contract-{index_method}"
        job = client.ingest_read(index, ReadResult(documents=CURIE_CORPUS), method=index_method)
        assert job.state is JobState.SUCCEEDED and not job.errors, (job.reason, job.errors)
        return QueryTarget(client=client, index=index, question=QUESTION)

    return build


class TestQueryMethodsWithAnLlm(QueryMethodContract):
    """Every query method over every index method, the LLM and the embeddings being the
    test server's."""

    @pytest.fixture(scope="class")
    def build_index(self, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexFactory]:
        server = LlmTestServer(LlmServerConfig()).start_in_thread()
        try:
            settings = llm_settings(tmp_path_factory.mktemp("with-llm"), server,
                                    embedder_url=f"openai://{server.config.embedding_model}")
            with local_client(settings) as client:
                yield index_builder(client)
        finally:
            server.stop()


class TestQueryMethodsWithoutAnLlm(QueryMethodContract):
    """No LLM configured at all: the methods that need none still answer (the default
    embedder, no LLM setting read)."""

    query_methods = tuple(name for name in query_method_names()
                          if get_query_method(name).llm_use is LlmUse.NONE)
    index_methods = tuple(name for name in index_method_names()
                          if get_index_method(name).llm_use is LlmUse.NONE)

    @pytest.fixture(scope="class")
    def build_index(self, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexFactory]:
        data_dir: Path = tmp_path_factory.mktemp("without-llm")
        with local_client(Settings(data_dir=data_dir).resolved()) as client:
            assert not client.settings.llm_enabled
            yield index_builder(client)
