"""Hostile JSON through the CLI: no traceback ever; a file mixing good and hostile lines
ingests the good one and exits 3 naming each bad line and field; a file of nothing but
hostile lines exits 65, the input error code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode
from tests.conftest import CURIE_CORPUS

pytestmark = pytest.mark.integration

HOSTILE_LINES = [
    '{"id": "big", "text": "x", "metadata": {"n": ' + "9" * 5_000 + "}}",
    '{"id": "deep", "text": "x", "metadata": ' + "[" * 10_000 + "]" * 10_000 + "}",
    '{"id": "sur", "text": "a \\ud800 b"}',
]
# The origin of each hostile line's error when it is line N + 1 of c.jsonl.
FIELDS = ["metadata.n", "metadata" + "[0]" * 11, "text"]


def test_good_line_is_ingested_beside_hostile_ones(cli: CliRunner, tmp_path: Path) -> None:
    """A 5,000-digit integer, 10,000-deep nesting and an unpaired surrogate each fail
    their line (exit 3, file:line:field on the job); the good line is ingested."""
    good = CURIE_CORPUS[0]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join([json.dumps({"id": "good", "title": good.title,
                                             "text": good.text}), *HOSTILE_LINES]) + "\n",
                      encoding="utf-8")
    result = cli.invoke(main, ["ingest", "--index", "curie", "--json", str(corpus)])
    assert result.exit_code == ExitCode.PARTIAL, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    job = json.loads(result.stdout)
    assert job["state"] == "succeeded"
    assert job["counts"]["extractive.stage1"]["done"] == 1
    assert [e["where"] for e in job["errors"]] == [
        f"{corpus}:{n}:{field}" for n, field in enumerate(FIELDS, start=2)]
    found = cli.invoke(main, ["query", "--index", "curie", "--json", "--k", "1", good.title])
    assert found.exit_code == 0, found.output
    assert [p["doc_id"] for p in json.loads(found.stdout)["passages"]] == ["good"]


def test_a_file_of_hostile_lines_only_exits_with_the_input_error_code(cli: CliRunner,
                                                                      tmp_path: Path) -> None:
    """Nothing usable in the input: exit 65 with each line named on the job, one error
    on stderr saying so, no traceback, and the job (which records why) is not left
    running."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(HOSTILE_LINES) + "\n", encoding="utf-8")
    result = cli.invoke(main, ["ingest", "--index", "curie", "--json", str(corpus)])
    assert result.exit_code == ExitCode.DATA_ERROR, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    job = json.loads(result.stdout)
    error = json.loads(result.stderr.splitlines()[-1])["error"]
    assert (error["code"], error["exit_code"]) == ("input_refused", 65)
    assert job["job_id"] in error["message"]
    assert [e["where"] for e in job["errors"]] == [
        f"{corpus}:{n}:{field}" for n, field in enumerate(FIELDS, start=1)]
    listed = cli.invoke(main, ["jobs", "--json"])
    assert [j["state"] for j in json.loads(listed.stdout)] == ["succeeded"]


def test_a_question_with_an_unpaired_surrogate_is_an_input_error(tmp_path: Path) -> None:
    """The client refuses a question it could not send to an embedder or an LLM,
    naming the field, before it opens anything (the CLI passes undecodable argument
    bytes through as lone surrogates)."""
    from hopindex import Client
    from hopindex.core.errors import InvalidInputError
    from hopindex.core.settings import Settings

    with Client.local(settings=Settings(data_dir=tmp_path).resolved()) as client, \
            pytest.raises(InvalidInputError, match="question"):
        client.query("anything", "who was \ud800 born to?", k=5)
