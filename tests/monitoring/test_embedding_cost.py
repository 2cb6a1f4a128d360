"""Embedding figures in the LLM metric families: ``hopindex_llm_tokens_total`` and
``hopindex_llm_cost_total`` under ``stage="embed"`` and the embedding model, equal to the
tokens the provider reported (times the price when set) for jobs and queries alike;
unpriced embeddings add no cost series, and no LLM request is counted for them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from hopindex.backends.embedder.metering import EMBED_STAGE
from hopindex.core.models import JobState
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer, running_llm_server
from tests.conftest import CURIE_CORPUS, ingest_documents, local_client
from tests.methods.indexrag.conftest import llm_settings

pytestmark = pytest.mark.integration

PRICE = 0.02  # per million embedding tokens


@pytest.fixture
def server() -> Iterator[LlmTestServer]:
    with running_llm_server(LlmServerConfig()) as test_server:
        yield test_server


def sample(name: str, model: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, {"stage": EMBED_STAGE, "model": model, **labels})


def ingest_and_query(tmp_path: Path, server: LlmTestServer, model: str,
                     **overrides: object) -> None:
    settings = llm_settings(tmp_path / model, server, llm_model="",
                            embedder_url=f"openai://{model}", **overrides)
    with local_client(settings) as client:
        job = ingest_documents(client, "curie", CURIE_CORPUS, method="extractive")
        assert job.state is JobState.SUCCEEDED, job.reason
        client.query("curie", "Where was Marie Curie born?", k=2)


def test_priced_embeddings_add_tokens_and_cost_under_the_embed_stage(
        server: LlmTestServer, tmp_path: Path) -> None:
    """After an ingest and a query, the token counter holds every embedding token the
    server counted and the cost counter those tokens times the price."""
    model = "embed-cost-priced"
    ingest_and_query(tmp_path, server, model, embedding_price_per_mtok=PRICE)
    tokens = server.stats.embedding_tokens
    assert tokens > 0
    assert sample("hopindex_llm_tokens_total", model, kind="prompt") == tokens
    assert sample("hopindex_llm_cost_total", model) == pytest.approx(tokens * PRICE / 1e6)
    assert sample("hopindex_llm_requests_total", model, outcome="ok") is None


def test_unpriced_embeddings_count_tokens_and_no_cost(server: LlmTestServer,
                                                      tmp_path: Path) -> None:
    """Without the price the tokens are counted and no cost series appears (not a zero)."""
    model = "embed-cost-unpriced"
    ingest_and_query(tmp_path, server, model)
    assert sample("hopindex_llm_tokens_total", model,
                  kind="prompt") == server.stats.embedding_tokens > 0
    assert sample("hopindex_llm_cost_total", model) is None


def test_metrics_off_records_no_embedding_series(server: LlmTestServer,
                                                 tmp_path: Path) -> None:
    """HOPINDEX_METRICS=off: embeddings are metered for the job record, not Prometheus."""
    model = "embed-cost-off"
    ingest_and_query(tmp_path, server, model, embedding_price_per_mtok=PRICE, metrics="off")
    assert server.stats.embedding_tokens > 0
    assert sample("hopindex_llm_tokens_total", model, kind="prompt") is None
