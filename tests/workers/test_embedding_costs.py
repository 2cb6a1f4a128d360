"""What embeddings from a remote provider cost: the embed steps' requests and tokens on
the job record (apart from its LLM figures), a query's embedding tokens in its usage,
both priced at HOPINDEX_EMBEDDING_PRICE_PER_MTOK when it is set and never otherwise.
Eager runs against the local OpenAI-compatible test server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from hopindex.api.client.local import LocalClient
from hopindex.api.render import render_job, render_result
from hopindex.core.models import Job, JobState
from hopindex.readers import ReadResult
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS
from tests.methods.indexrag.conftest import llm_settings, local_client
from tests.workers.conftest import embedder_settings

pytestmark = pytest.mark.integration

LlmServerStarter = Callable[..., LlmTestServer]

EMBEDDING_PRICE = 0.13  # per million tokens
QUESTION = "Who did Marie Curie share the Nobel Prize with?"


CURIE = ReadResult(documents=list(CURIE_CORPUS))


def open_client(tmp_path: Path, server: LlmTestServer, **overrides: object) -> LocalClient:
    return local_client(llm_settings(tmp_path / "data", server, **embedder_settings(server),
                                     **overrides))


def test_a_priced_ingest_records_embedding_tokens_and_cost(
        start_server: LlmServerStarter, tmp_path: Path) -> None:
    """The job's embedding tokens and requests are the server's, its cost is tokens times
    the price, its LLM totals are still the chat calls alone, and the record, its JSON
    and the CLI carry them."""
    server = start_server()
    with open_client(tmp_path, server, embedding_price_per_mtok=EMBEDDING_PRICE) as client:
        job = client.ingest_read("curie", CURIE)
    assert job.state is JobState.SUCCEEDED, job.reason
    stats = server.stats
    assert job.embedding.tokens == stats.embedding_tokens > 0
    assert job.embedding.requests == stats.count(Endpoint.EMBEDDINGS)
    assert job.embedding.cost == pytest.approx(stats.embedding_tokens * EMBEDDING_PRICE / 1e6)
    assert job.llm_total.prompt_tokens == stats.prompt_tokens
    assert job.llm_total.calls == stats.count(Endpoint.CHAT)
    assert Job.from_dict(job.as_dict()).embedding == job.embedding
    console = Console(record=True, width=240)
    render_job(console, job)
    assert (f"embedding: {job.embedding.requests} requests, {job.embedding.tokens} tokens, "
            f"cost ") in console.export_text()


def test_an_unpriced_ingest_records_tokens_and_no_cost(start_server: LlmServerStarter,
                                                       tmp_path: Path) -> None:
    """Without the price: the tokens, and no cost on the record, in its JSON or the CLI."""
    server = start_server()
    with open_client(tmp_path, server) as client:
        job = client.ingest_read("curie", CURIE)
    assert job.state is JobState.SUCCEEDED, job.reason
    assert job.embedding.tokens == server.stats.embedding_tokens > 0
    assert job.embedding.cost is None and "cost" not in job.as_dict()["embedding"]
    console = Console(record=True, width=240)
    render_job(console, job)
    shown = console.export_text()
    assert f"embedding: {job.embedding.requests} requests, {job.embedding.tokens} tokens\n" \
        in shown


def test_a_query_reports_its_embedding_tokens_and_their_cost(
        start_server: LlmServerStarter, tmp_path: Path) -> None:
    """A query's embedding tokens are what the server counted for it; a retrieval-only
    query's cost is theirs at the price, and an answered one adds them to the LLM's."""
    server = start_server()
    with open_client(tmp_path, server, embedding_price_per_mtok=EMBEDDING_PRICE,
                     llm_price_input_per_mtok=0.4,
                     llm_price_output_per_mtok=1.6) as client:
        assert client.ingest_read("curie", CURIE).state is JobState.SUCCEEDED
        plain = client.ingest_read("plain", CURIE, method="extractive")
        assert plain.state is JobState.SUCCEEDED
        before = server.stats
        retrieval = client.query("plain", QUESTION, k=3)
        between = server.stats
        answered = client.query("curie", QUESTION, k=3)
        after = server.stats
    tokens = between.embedding_tokens - before.embedding_tokens
    assert retrieval.usage.embedding_tokens == tokens > 0
    assert retrieval.usage.llm_calls == 0
    assert retrieval.usage.cost == pytest.approx(tokens * EMBEDDING_PRICE / 1e6)
    assert retrieval.as_dict()["usage"]["embedding_tokens"] == tokens
    used = answered.usage
    assert used.embedding_tokens == after.embedding_tokens - between.embedding_tokens > 0
    llm_cost = (used.prompt_tokens * 0.4 + used.completion_tokens * 1.6) / 1e6
    assert used.llm_calls > 0
    assert used.cost == pytest.approx(llm_cost + used.embedding_tokens * EMBEDDING_PRICE / 1e6)
    console = Console(record=True, width=240)
    render_result(console, retrieval)
    assert f"{tokens} embedding tokens, cost " in console.export_text()


def test_an_unpriced_embedding_leaves_the_llm_cost_of_a_query_as_it_was(
        start_server: LlmServerStarter, tmp_path: Path) -> None:
    """LLM prices without an embedding price: the query's cost is its LLM calls' alone,
    with its embedding tokens beside it."""
    server = start_server()
    with open_client(tmp_path, server, llm_price_input_per_mtok=0.4,
                     llm_price_output_per_mtok=1.6) as client:
        assert client.ingest_read("curie", CURIE).state is JobState.SUCCEEDED
        used = client.query("curie", QUESTION, k=3).usage
    assert used.embedding_tokens > 0
    assert used.cost == pytest.approx((used.prompt_tokens * 0.4
                                       + used.completion_tokens * 1.6) / 1e6)
