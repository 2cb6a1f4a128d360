"""``hopindex jobs JOB_ID`` shows an ingest's dry-run estimate beside its actual LLM use
(one row of each per phase, "≤" on a bound, a cost column when prices are set) and
``--json`` carries the estimate; an extractive job shows neither."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS, ingest_documents, local_client
from tests.methods.indexrag.conftest import llm_settings
from tests.workers.conftest import embedder_settings

pytestmark = pytest.mark.integration


def _rows(output: str, phase: str) -> tuple[list[str], list[str]]:
    """The cells of ``phase``'s estimate row in the job view and of the actual row
    under it (columns are two or more spaces apart; "≤ 11" is one cell)."""
    lines = output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == [phase, "estimate"])
    estimate = lines[at].split(None, 2)[2]
    actual = lines[at + 1].split(None, 1)
    assert actual[0] == "actual", lines[at + 1]
    return re.split(r"\s{2,}", estimate.strip()), re.split(r"\s{2,}", actual[1].strip())


def test_jobs_shows_estimate_and_actual_per_phase(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """After two IndexRAG ingests with prices set, the second job's view has a stage-1
    estimate row whose calls equal the actual row's, a stage-2 estimate that is a bound
    ("≤") over the calls made, both cost figures, and says the tokens came from the
    index's history; ``--json`` holds the same estimate as the job record."""
    server = start_server()
    settings = llm_settings(tmp_path / "data", server, **embedder_settings(server),
                            llm_price_input_per_mtok=0.15, llm_price_output_per_mtok=0.60)
    with local_client(settings) as client:
        ingest_documents(client, "curie", CURIE_CORPUS[:3], method="indexrag")
        job = ingest_documents(client, "curie", CURIE_CORPUS[3:])
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data")})
    shown = cli.invoke(main, ["jobs", job.job_id])
    assert shown.exit_code == 0, shown.output
    output = shown.output
    assert "LLM estimate (planned at submit, as a dry run) and actual use:" in output
    planned, used = _rows(output, "indexrag.stage1")
    assert planned[0] == used[0] == f"{job.llm['indexrag.stage1'].calls:,}"
    assert planned[1] == f"{job.estimate['indexrag.stage1']['prompt_tokens']:,}"
    assert used[1] == f"{job.llm['indexrag.stage1'].prompt_tokens:,}"
    assert len(planned) == len(used) == 4  # calls, prompt, completion, cost
    bound, made = _rows(output, "indexrag.stage2")
    assert bound[0] == f"≤ {job.estimate['indexrag.stage2']['calls']:,}"
    assert made[0] == f"{job.llm['indexrag.stage2'].calls:,}"
    assert "estimated tokens (history):" in output
    as_json = cli.invoke(main, ["jobs", job.job_id, "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout)["estimate"] == job.estimate


def test_extractive_job_view_has_no_estimate(tmp_path: Path) -> None:
    """A job of a method without an LLM planned nothing: its view has no estimate table
    and its JSON an empty estimate."""
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data")})
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"title": d.title, "text": d.text}) + "\n"
                              for d in CURIE_CORPUS[:2]))
    ingested = cli.invoke(main, ["ingest", "--index", "curie", "--method", "extractive",
                                 "--json", str(corpus)])
    assert ingested.exit_code == 0, ingested.output
    job_id = json.loads(ingested.stdout)["job_id"]
    shown = cli.invoke(main, ["jobs", job_id])
    assert shown.exit_code == 0, shown.output
    assert "estimate" not in shown.output
    assert json.loads(cli.invoke(main, ["jobs", job_id, "--json"]).stdout)["estimate"] == {}
