"""An ingest job keeps its dry-run plan (``Job.estimate``) beside what its calls used:
an IndexRAG job against the local test LLM server plans the stage-1 calls it then
sends, priced when prices are set; an extractive job (no LLM) plans nothing; a phase
whose planning needs the NLP analyser (CompactRAG's) is left to dry runs; a planner
that raises costs the ingest nothing but its estimate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from hopindex.api.client.local import LocalClient
from hopindex.backends.llm.usage import LlmPrices
from hopindex.core.models import Job, JobState
from hopindex.methods.indexrag.method import IndexRagIndexMethod
from hopindex.readers import RawDocument, ReadResult
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS, raw
from tests.methods.indexrag.conftest import ClientFactory, llm_settings, local_client
from tests.workers.conftest import embedder_settings

pytestmark = pytest.mark.integration

# About 5,000 characters: under IndexRAG's token limit, sent whole in one stage-1 call.
LONG = raw("Long Document", " ".join(f"Sentence {n} says Marie Curie studied element {n}."
                                     for n in range(100)))
PRICES = {"llm_price_input_per_mtok": 0.15, "llm_price_output_per_mtok": 0.60}


def ingest(client: LocalClient, index: str, documents: list[RawDocument],
           method: str | None = None) -> Job:
    return client.ingest_read(index, ReadResult(documents=documents), method=method)


def test_indexrag_job_keeps_the_plan_of_the_calls_it_sends(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """The job's stage-1 estimate is exact and equals the calls the job made and the
    server received; its tokens are the character ratio (no history yet) priced at the
    configured prices; stage 2 of a first ingest is not planned; the second job's
    estimate comes from the first's history and still equals its stage-1 calls."""
    server = start_server()
    settings = llm_settings(tmp_path / "data", server, **embedder_settings(server), **PRICES)
    with local_client(settings) as client:
        job = ingest(client, "curie", [*CURIE_CORPUS[:3], LONG], method="indexrag")
        assert job.state is JobState.SUCCEEDED
        stage1 = job.estimate["indexrag.stage1"]
        assert stage1["planning"] == "exact"
        assert stage1["calls"] == job.llm["indexrag.stage1"].calls == 3 + 1
        assert server.stats.by_kind["stage1"] == stage1["calls"]
        assert (stage1["token_basis"], stage1["model"]) == ("characters", server.config.model)
        prices = LlmPrices(PRICES["llm_price_input_per_mtok"],
                           PRICES["llm_price_output_per_mtok"])
        assert stage1["cost"] == pytest.approx(prices.cost_of(stage1["prompt_tokens"],
                                                              stage1["completion_tokens"]))
        assert job.estimate["indexrag.stage2"]["planning"] == "not_planned"
        again = ingest(client, "curie", CURIE_CORPUS[3:])
        assert again.estimate["indexrag.stage1"]["token_basis"] == "history"
        assert again.estimate["indexrag.stage1"]["calls"] == \
            again.llm["indexrag.stage1"].calls == len(CURIE_CORPUS) - 3
        assert again.estimate["indexrag.stage2"]["planning"] == "bound"
        assert again.llm["indexrag.stage2"].calls <= again.estimate["indexrag.stage2"]["calls"]
        # The record read back from the state store keeps it.
        assert client.jobs.get_job(again.job_id).estimate == again.estimate


def test_extractive_job_keeps_no_estimate(make_client: ClientFactory) -> None:
    """A method that calls no LLM is not planned at all: its job's estimate is empty."""
    client = make_client()
    job = ingest(client, "curie", CURIE_CORPUS[:2], method="extractive")
    assert job.state is JobState.SUCCEEDED
    assert job.estimate == {}
    assert client.jobs.get_job(job.job_id).as_dict()["estimate"] == {}


def test_compactrag_job_leaves_its_analysed_phase_to_dry_runs(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """CompactRAG's ``qa`` prompts carry spaCy's entities: the job does not run the
    analyser to plan them (its ``qa`` estimate is "not planned", saying the dry run
    plans it), while a dry run of the same documents into another index plans them
    exactly; the job's ``pairs`` phase (no LLM) is still planned."""
    server = start_server()
    with local_client(llm_settings(tmp_path / "data", server, **embedder_settings(server))
                      ) as client:
        job = ingest(client, "qa", CURIE_CORPUS[:2], method="compactrag")
        planned = client.plan_read("qa2", ReadResult(documents=CURIE_CORPUS[2:4]),
                                   method="compactrag")
    assert job.state is JobState.SUCCEEDED
    qa = job.estimate["compactrag.qa"]
    assert (qa["planning"], qa["calls"]) == ("not_planned", None)
    assert "hopindex ingest --dry-run" in qa["basis"]
    assert (job.estimate["compactrag.pairs"]["planning"],
            job.estimate["compactrag.pairs"]["calls"]) == ("bound", 0)
    assert (planned.phases[0]["planning"], planned.phases[0]["calls"]) == ("exact", 2)


def test_a_planner_that_raises_leaves_the_ingest_alone(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A planner failing with an unexpected error logs ``job_estimate_failed`` and the
    job runs as it would have, with no estimate."""
    server = start_server()

    def broken(*_: object) -> None:
        raise RuntimeError("planner bug")

    monkeypatch.setattr(IndexRagIndexMethod, "plan_document_calls", broken)
    with local_client(llm_settings(tmp_path / "data", server, **embedder_settings(server))
                      ) as client, capture_logs() as logs:
        job = ingest(client, "curie", CURIE_CORPUS[:2], method="indexrag")
    assert job.state is JobState.SUCCEEDED
    assert job.estimate == {}
    assert job.llm["indexrag.stage1"].calls == 2
    failed = [e for e in logs if e["event"] == "job_estimate_failed"]
    assert failed and "planner bug" in failed[0]["error"]
