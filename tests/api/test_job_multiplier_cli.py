"""``hopindex jobs JOB_ID`` shows the corpus an LLM job read and its LLM tokens per
corpus token, per phase and for the job; ``--json`` carries ``corpus_tokens`` and
``token_multiplier``; a job of a method without an LLM shows neither."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.core.token_multiplier import multiplier_text
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS, ingest_documents, llm_settings, local_client
from tests.workers.conftest import embedder_settings

pytestmark = pytest.mark.integration

HEADER = "LLM tokens per corpus token"


def _row(output: str, name: str) -> list[str]:
    """The cells of ``name``'s row in the multiplier table, below its header (the
    counts table above names the phases too); cells are two or more spaces apart."""
    lines = output.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(HEADER))
    line = next(line for line in lines[start:] if line.split()[:1] == [name])
    return re.split(r"\s{2,}", line.strip())[1:]


def test_jobs_shows_the_multiplier_per_phase_and_for_the_job(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """An IndexRAG job of four documents: a corpus line with the job's count and how it
    was counted, a row per phase and one for the job with prompt, completion and total
    tokens per corpus token as the record computes them; the JSON holds the same."""
    server = start_server()
    settings = llm_settings(tmp_path / "data", server, **embedder_settings(server))
    with local_client(settings) as client:
        job = ingest_documents(client, "curie", CURIE_CORPUS[:4], method="indexrag")
    corpus = job.corpus_tokens
    assert corpus is not None and corpus > 0
    record = job.as_dict()["token_multiplier"]
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data")})
    shown = cli.invoke(main, ["jobs", job.job_id])
    assert shown.exit_code == 0, shown.output
    assert f"corpus: {corpus:,} tokens of the documents the LLM phases read" in shown.output
    assert "0.25 tokens per character" in shown.output
    assert HEADER in shown.output
    for phase in ("indexrag.stage1", "indexrag.stage2"):
        usage = job.llm[phase]
        assert _row(shown.output, phase) == [
            multiplier_text(usage.prompt_tokens / corpus),
            multiplier_text(usage.completion_tokens / corpus),
            multiplier_text((usage.prompt_tokens + usage.completion_tokens) / corpus)]
    total = job.llm_total
    assert _row(shown.output, "job")[2] == multiplier_text(
        (total.prompt_tokens + total.completion_tokens) / corpus)
    as_json = json.loads(cli.invoke(main, ["jobs", job.job_id, "--json"]).stdout)
    assert (as_json["corpus_tokens"], as_json["token_multiplier"]) == (corpus, record)
    assert set(as_json["token_multiplier"]["stages"]) == {"indexrag.stage1",
                                                          "indexrag.stage2"}


def test_a_job_without_an_llm_shows_no_multiplier(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """An extractive job counted no corpus: no corpus line, no table, nulls in JSON."""
    server = start_server()
    settings = llm_settings(tmp_path / "data", server, **embedder_settings(server))
    with local_client(settings) as client:
        job = ingest_documents(client, "curie", CURIE_CORPUS[:2], method="extractive")
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data")})
    shown = cli.invoke(main, ["jobs", job.job_id])
    assert shown.exit_code == 0, shown.output
    assert "corpus:" not in shown.output and HEADER not in shown.output
    as_json = json.loads(cli.invoke(main, ["jobs", job.job_id, "--json"]).stdout)
    assert (as_json["corpus_tokens"], as_json["token_multiplier"]) == (None, None)
