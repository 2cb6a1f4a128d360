"""Ingest dry runs against the local test LLM server: the plan's document counts, its
stage-1 calls equal to what the real ingest then sends, the response cache taking
planned calls off, token estimates switching to the index's history, and a dry run
that sends no request and writes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.client.local import LocalClient
from hopindex.api.client.models import IngestPlanView
from hopindex.api.exit_codes import ExitCode
from hopindex.api.render_estimate import cost_figure
from hopindex.core.errors import InvalidInputError
from hopindex.readers import RawDocument
from hopindex.scheduler.dry_run import Planning
from hopindex.scheduler.dry_run_tokens import TokenBasis
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS, ingest_documents, local_client, plan_documents, raw
from tests.methods.indexrag.conftest import llm_settings
from tests.workers.conftest import embedder_settings

pytestmark = pytest.mark.integration

# About 5,000 characters: whole under IndexRAG's default token limit; under a limit of
# 500 tokens (2,000 characters), three overlapping chunks, three stage-1 calls.
SMALL_LIMIT = {"HOPINDEX_INDEXRAG_MAX_DOCUMENT_TOKENS": "500"}
LONG = raw("Long Document", " ".join(f"Sentence {n} says Marie Curie studied element {n}."
                                     for n in range(100)))


def _client(tmp_path: Path, server: LlmTestServer, name: str = "data",
            **overrides: object) -> LocalClient:
    return local_client(llm_settings(tmp_path / name, server, **embedder_settings(server),
                                     **overrides))


def _chat_requests(server: LlmTestServer) -> int:
    return sum(server.stats.by_kind.values())


def _phase(plan: IngestPlanView, name: str) -> dict[str, Any]:
    return next(p for p in plan.phases if p["phase"] == name)


def _snapshot(client: LocalClient, index: str) -> dict[str, Any]:
    state = client.service.backends.state
    info = state.get_index(index)
    hashes = state.document_hashes(index) if info else {}
    units = state.units_of_documents(index, sorted(hashes)) if hashes else []
    return {"index": info, "hashes": hashes, "jobs": [j.job_id for j in
                                                      client.jobs.list_jobs(index, 100)],
            "units": sorted(u.unit_id for u in units),
            "mentions": state.mentions_of_documents(index, sorted(hashes)) if hashes else {}}


def test_counts_and_nothing_sent_or_written(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """After ingesting three documents, a dry run of one unchanged, one changed, one new
    and one empty record counts 1/1/1/1, plans stage 1 for the two to do, sends the
    server no request and leaves the state (index, documents, jobs, units, mentions)
    as it was; a dry run into a new index creates neither the index nor a cache file."""
    server = start_server()
    with _client(tmp_path, server) as client:
        fresh = plan_documents(client, "fresh", CURIE_CORPUS[:3], method="indexrag")
        assert fresh.documents == {"new": 3, "changed": 0, "unchanged": 0, "invalid": 0,
                                   "removed": 0}
        assert not fresh.index_exists and client.indexes.list_indexes() == []
        assert not (tmp_path / "data" / "llm-cache.sqlite3").exists()
        assert _chat_requests(server) == 0
        ingest_documents(client, "curie", CURIE_CORPUS[:3], method="indexrag")
        before = _snapshot(client, "curie")
        sent = _chat_requests(server)
        changed = CURIE_CORPUS[1]
        batch = [CURIE_CORPUS[0], raw(changed.title, changed.text + " He died in 1906."),
                 CURIE_CORPUS[3], raw("Empty", "   ")]
        plan = plan_documents(client, "curie", batch)
        assert _chat_requests(server) == sent
        assert _snapshot(client, "curie") == before
    assert plan.documents == {"new": 1, "changed": 1, "unchanged": 1, "invalid": 1,
                              "removed": 0}
    assert plan.errors[0]["where"] == "Empty" and "'text' is empty" in plan.errors[0]["reason"]
    stage1 = _phase(plan, "indexrag.stage1")
    assert (stage1["planning"], stage1["calls"], stage1["cache_hits"]) == (Planning.EXACT, 2, 0)


def test_stage1_plan_equals_the_real_ingest_and_stage2_stays_under_its_bound(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """The planned stage-1 calls (one per document, one per chunk of one over the token
    limit: the long document has three) are the calls the ingest then sends; on the
    second ingest the stage-2 bound holds, and the token estimates switch from
    characters to the index's history: the first job's tokens per prompt character and
    per document character, from the plan it recorded when submitted."""
    server = start_server()
    first = [*CURIE_CORPUS[:3], LONG]
    with _client(tmp_path, server, method_env=SMALL_LIMIT) as client:
        plan = plan_documents(client, "curie", first, method="indexrag")
        stage1 = _phase(plan, "indexrag.stage1")
        assert stage1["calls"] == 3 + 3
        assert stage1["token_basis"] == TokenBasis.CHARACTERS
        assert stage1["prompt_tokens"] == round(stage1["prompt_chars"] * 0.25)
        assert _phase(plan, "indexrag.stage2")["planning"] == Planning.NOT_PLANNED
        job = ingest_documents(client, "curie", first)
        assert server.stats.by_kind.get("stage1") == stage1["calls"]
        assert job.llm["indexrag.stage1"].calls == stage1["calls"]
        second = CURIE_CORPUS[3:]
        plan = plan_documents(client, "curie", second)
        stage1, stage2 = _phase(plan, "indexrag.stage1"), _phase(plan, "indexrag.stage2")
        assert stage1["token_basis"] == TokenBasis.HISTORY
        history, planned = job.llm["indexrag.stage1"], job.estimate["indexrag.stage1"]
        assert planned["calls"] == history.calls
        assert stage1["prompt_chars"] is not None and stage1["input_chars"] is not None
        assert stage1["prompt_tokens"] == round(stage1["prompt_chars"] * history.prompt_tokens
                                                / planned["prompt_chars"])
        assert stage1["completion_tokens"] == round(
            stage1["input_chars"] * history.completion_tokens / planned["input_chars"])
        assert stage1["input_chars"] == sum(len(d.title) + len(d.text.strip()) for d in second)
        assert stage2["planning"] == Planning.BOUND and stage2["calls"] is not None
        server.reset()
        ingest_documents(client, "curie", second)
        assert server.stats.by_kind.get("stage1") == stage1["calls"] == len(second)
        assert server.stats.by_kind.get("stage2", 0) <= stage2["calls"]


def test_cached_replies_are_not_planned(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """The same documents into a second index hit the response cache: the dry run plans
    only the changed document's chunk, and the real ingest sends exactly that; in the
    first index, changing one document plans only its chunk."""
    server = start_server()
    with _client(tmp_path, server) as client:
        ingest_documents(client, "first", CURIE_CORPUS, method="indexrag")
        edited = CURIE_CORPUS[2]
        corpus = [*CURIE_CORPUS[:2], raw(edited.title, edited.text + " It has a river."),
                  *CURIE_CORPUS[3:]]
        again = plan_documents(client, "first", corpus)
        assert _phase(again, "indexrag.stage1")["calls"] == 1
        plan = plan_documents(client, "second", corpus, method="indexrag")
        stage1 = _phase(plan, "indexrag.stage1")
        assert (stage1["calls"], stage1["cache_hits"]) == (1, len(CURIE_CORPUS) - 1)
        server.reset()
        ingest_documents(client, "second", corpus)
        assert server.stats.by_kind.get("stage1") == 1


def test_a_method_the_index_was_not_built_with_names_the_field(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """A dry run asking for another method than the index's is refused like the ingest:
    an input error on field ``method``."""
    server = start_server()
    with _client(tmp_path, server) as client:
        ingest_documents(client, "curie", CURIE_CORPUS[:1], method="indexrag")
        with pytest.raises(InvalidInputError) as refused:
            plan_documents(client, "curie", CURIE_CORPUS[1:2], method="extractive")
    assert refused.value.where == "method"


def _write(path: Path, records: list[RawDocument]) -> Path:
    path.write_text("".join(json.dumps({"title": r.title, "text": r.text}) + "\n"
                            for r in records))
    return path


def test_cli_prints_the_table_or_the_plan_as_json(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """``hopindex ingest --dry-run`` prints the plan's table, ``--json`` the plan object;
    a file of only bad records exits 65 naming the line and field; no request reaches the
    server, and the data dir, which did not exist, still does not."""
    server = start_server()
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data"),
                         "HOPINDEX_LLM_MODEL": server.config.model,
                         "HOPINDEX_LLM_BASE_URL": server.base_url,
                         "HOPINDEX_LLM_API_KEY": "test-key",
                         "HOPINDEX_EMBEDDER_URL": f"openai://{server.config.embedding_model}"})
    corpus = _write(tmp_path / "c.jsonl", CURIE_CORPUS)
    shown = cli.invoke(main, ["ingest", "--index", "curie", "--dry-run", str(corpus)])
    assert shown.exit_code == 0, shown.output
    assert f"{len(CURIE_CORPUS)} new, 0 changed" in shown.output
    assert "indexrag.stage1" in shown.output and "0.25 tokens per prompt" in shown.output
    as_json = cli.invoke(main, ["ingest", "--index", "curie", "--dry-run", "--json",
                                str(corpus)])
    assert as_json.exit_code == 0, as_json.output
    plan = json.loads(as_json.stdout)
    assert plan["phases"][0] == {**plan["phases"][0], "phase": "indexrag.stage1",
                                 "planning": "exact", "calls": len(CURIE_CORPUS)}
    bad = _write(tmp_path / "bad.jsonl", [raw("Blank", " ")])
    refused = cli.invoke(main, ["ingest", "--index", "curie", "--dry-run", str(bad)])
    assert refused.exit_code == ExitCode.DATA_ERROR
    assert "bad.jsonl:1" in refused.output and "'text' is empty" in refused.output
    assert _chat_requests(server) == 0
    assert not (tmp_path / "data").exists()


def test_a_dry_run_creates_no_data_dir_and_reads_an_existing_one(tmp_path: Path) -> None:
    """Without an LLM: a dry run into a data dir that does not exist plans every document
    as new and leaves no file or folder behind; after the real ingest, a dry run of the
    same file reads the stored state (all unchanged) and adds no job."""
    data = tmp_path / "nested" / "data"
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(data)})
    corpus = _write(tmp_path / "c.jsonl", CURIE_CORPUS)
    planned = cli.invoke(main, ["ingest", "--index", "curie", "--dry-run", "--json",
                                str(corpus)])
    assert planned.exit_code == 0, planned.output
    plan = json.loads(planned.stdout)
    assert plan["index_exists"] is False and plan["documents"]["new"] == len(CURIE_CORPUS)
    assert not (tmp_path / "nested").exists()
    assert cli.invoke(main, ["ingest", "--index", "curie", "--quiet", str(corpus)]).exit_code == 0
    jobs = cli.invoke(main, ["jobs", "--json"]).stdout
    again = cli.invoke(main, ["ingest", "--index", "curie", "--dry-run", "--json", str(corpus)])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["documents"] == {
        "new": 0, "changed": 0, "unchanged": len(CURIE_CORPUS), "invalid": 0, "removed": 0}
    assert cli.invoke(main, ["jobs", "--json"]).stdout == jobs


def test_a_provider_embedder_is_planned_as_a_floor_and_priced(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """With ``openai://`` embeddings the plan gives the documents' tokens at 0.25 per
    character, priced at the embedding price; the ingest then embeds at least that
    many (the documents' passages and more units); the CLI prints the line."""
    server = start_server()
    settings = llm_settings(tmp_path / "data", server, **embedder_settings(server),
                            embedding_price_per_mtok=0.02)
    with local_client(settings) as client:
        plan = plan_documents(client, "curie", CURIE_CORPUS, method="indexrag")
        chars = sum(len(d.title) + len(d.text) for d in CURIE_CORPUS)
        assert plan.embedding is not None
        assert plan.embedding["model"] == server.config.embedding_model
        assert plan.embedding["tokens"] == round(chars * 0.25)
        assert plan.embedding["cost"] == pytest.approx(plan.embedding["tokens"] * 0.02 / 1e6)
        assert plan.embedding["basis"].startswith("the documents to embed")
        job = ingest_documents(client, "curie", CURIE_CORPUS)
        assert job.embedding.tokens >= plan.embedding["tokens"]
    local = llm_settings(tmp_path / "local", server)
    with local_client(local) as client:
        assert plan_documents(client, "curie", CURIE_CORPUS,
                              method="indexrag").embedding is None


def test_a_priced_dry_run_shows_both_prices_and_the_mode_it_would_run_in(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """With prices set, `ingest --dry-run` prints the LLM cost in all at the synchronous
    prices and at the batch price (half off, the default discount), naming the phases
    it cannot count, and the mode the ingest would run in with where that comes from:
    --llm-mode, else HOPINDEX_LLM_MODE; `--json` carries the same in llm_cost,
    llm_mode and llm_mode_from. No request reaches the server."""
    server = start_server()
    env = {"HOPINDEX_DATA_DIR": str(tmp_path / "data"), "HOPINDEX_LLM_MODEL": server.config.model,
           "HOPINDEX_LLM_BASE_URL": server.base_url, "HOPINDEX_LLM_API_KEY": "test-key",
           "HOPINDEX_EMBEDDER_URL": f"openai://{server.config.embedding_model}",
           "HOPINDEX_LLM_PRICE_INPUT_PER_MTOK": "1", "HOPINDEX_LLM_PRICE_OUTPUT_PER_MTOK": "2"}
    cli = CliRunner(env=env)
    corpus = str(_write(tmp_path / "c.jsonl", CURIE_CORPUS))
    as_json = cli.invoke(main, ["ingest", "--index", "curie", "--dry-run", "--json",
                                "--llm-mode", "batch", corpus])
    assert as_json.exit_code == 0, as_json.output
    plan = json.loads(as_json.stdout)
    assert (plan["llm_mode"], plan["llm_mode_from"]) == ("batch", "request")
    cost = plan["llm_cost"]
    stage1 = plan["phases"][0]
    assert cost["sync"] == pytest.approx(stage1["cost"]) and cost["sync"] > 0
    assert cost["batch"] == pytest.approx(cost["sync"] / 2)
    assert cost["left_out"] == ["indexrag.stage2"] and cost["bound"] is False
    shown = cli.invoke(main, ["ingest", "--index", "curie", "--dry-run", corpus])
    assert shown.exit_code == 0, shown.output
    assert (f"LLM cost: {cost_figure(cost['sync'])} synchronous, "
            f"{cost_figure(cost['batch'])} in batch mode (50% off); not counted: "
            "indexrag.stage2 (not planned)") in shown.stdout
    assert "LLM mode: the ingest would run in sync mode (HOPINDEX_LLM_MODE)" in shown.stdout
    flagged = cli.invoke(main, ["ingest", "--index", "curie", "--dry-run", "--llm-mode",
                                "batch", corpus])
    assert "LLM mode: the ingest would run in batch mode (--llm-mode)" in flagged.stdout
    assert _chat_requests(server) == 0
