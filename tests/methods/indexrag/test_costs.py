"""What an IndexRAG ingest and query cost at configured LLM prices, against the local test
server: per phase and in total on the job record, in the query's usage, in the HTTP JSON
shapes and the CLI; and nothing at all when no price is set."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from hopindex.api.render import render_job, render_result
from hopindex.core.models import Job, JobState, LlmUsage
from hopindex.methods.base import QueryUsage
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import (
    CURIE_CORPUS,
    LlmClientFactory,
    ingest_documents,
    llm_settings,
    local_client,
)

pytestmark = pytest.mark.integration

LlmServerStarter = Callable[..., LlmTestServer]

INPUT_PRICE = 0.4  # per million prompt tokens
OUTPUT_PRICE = 1.6  # per million completion tokens
PRICED = {"llm_price_input_per_mtok": INPUT_PRICE, "llm_price_output_per_mtok": OUTPUT_PRICE}
QUESTION = "Who did Marie Curie share the Nobel Prize with?"


def priced(usage: LlmUsage | QueryUsage) -> float:
    return (usage.prompt_tokens * INPUT_PRICE + usage.completion_tokens * OUTPUT_PRICE) / 1e6


def test_a_priced_ingest_records_each_phase_cost_and_the_total(
        start_server: LlmServerStarter, tmp_path: Path) -> None:
    """Each phase's cost is its tokens times the prices, the total is their sum, both go
    into the job JSON, and the record keeps them when read back under other prices."""
    server = start_server()
    with local_client(llm_settings(tmp_path / "data", server, **PRICED)) as client:
        job = ingest_documents(client, "curie", CURIE_CORPUS)
        assert job.state is JobState.SUCCEEDED, job.reason
        assert {"indexrag.stage1", "indexrag.stage2"} <= job.llm.keys()
        for phase, usage in job.llm.items():
            assert usage.calls > 0, phase
            assert usage.cost == pytest.approx(priced(usage)), phase
        total = job.llm_total
        assert total.prompt_tokens == server.stats.prompt_tokens
        assert total.cost == pytest.approx(priced(total))
        assert total.cost == pytest.approx(sum(u.cost or 0.0 for u in job.llm.values()))
        data = job.as_dict()
        assert data["llm"]["cost"] == pytest.approx(total.cost)
        assert data["llm"]["stages"]["indexrag.stage1"]["cost"] == pytest.approx(
            job.llm["indexrag.stage1"].cost)
        console = Console(record=True, width=240)
        render_job(console, job)
        shown = console.export_text()
        assert shown.count(", cost ") == len(job.llm) + 1  # each phase and the total
        job_id, stored_cost = job.job_id, total.cost
    # The prices change; the job's history does not.
    with local_client(llm_settings(tmp_path / "data", server, llm_price_input_per_mtok=100.0,
                                   llm_price_output_per_mtok=100.0)) as repriced:
        assert repriced.jobs.get_job(job_id).llm_total.cost == pytest.approx(stored_cost)


def test_a_priced_query_reports_its_cost(start_server: LlmServerStarter,
                                         make_llm_client: LlmClientFactory) -> None:
    """An indexrag query (one answer call) costs its tokens times the prices, in its usage,
    its JSON and the CLI line."""
    server = start_server()
    client = make_llm_client(server, **PRICED)
    assert ingest_documents(client, "curie", CURIE_CORPUS).state is JobState.SUCCEEDED
    result = client.query("curie", QUESTION, k=3)
    assert result.usage.llm_calls == 1
    assert result.usage.cost == pytest.approx(priced(result.usage))
    assert result.usage.cost is not None and result.usage.cost > 0
    assert result.as_dict()["usage"]["cost"] == pytest.approx(result.usage.cost)
    console = Console(record=True, width=240)
    render_result(console, result)
    assert ", cost " in console.export_text()


def test_without_prices_there_is_no_cost_anywhere(start_server: LlmServerStarter,
                                                  make_llm_client: LlmClientFactory) -> None:
    """Unpriced: tokens on the job and the query, but no cost on either, in their JSON
    or on the CLI (absent, not 0)."""
    server = start_server()
    client = make_llm_client(server)
    job = ingest_documents(client, "curie", CURIE_CORPUS)
    assert job.state is JobState.SUCCEEDED, job.reason
    assert job.llm_total.prompt_tokens > 0
    assert all(usage.cost is None for usage in job.llm.values())
    assert job.llm_total.cost is None
    data = job.as_dict()
    assert "cost" not in data["llm"]
    assert all("cost" not in stage for stage in data["llm"]["stages"].values())
    assert Job.from_dict(data).llm_total.cost is None
    result = client.query("curie", QUESTION, k=3)
    assert result.usage.prompt_tokens > 0
    assert result.usage.cost is None and "cost" not in result.as_dict()["usage"]
    console = Console(record=True, width=240)
    render_job(console, job)
    render_result(console, result)
    assert "cost" not in console.export_text()

