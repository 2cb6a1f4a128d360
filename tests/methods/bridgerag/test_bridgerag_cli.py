"""``hopindex query --trace/--param`` and ``hopindex eval --method bridgerag`` through the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.methods.bridgerag.conftest import hotpot_documents, hotpot_questions

pytestmark = pytest.mark.integration

QUESTIONS = 3


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[CliRunner, Path]]:
    """A CLI whose settings point at the test server, over an extractive index of the
    first questions' paragraphs; yields the runner and the questions file."""
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    tmp = tmp_path_factory.mktemp("bridgerag-cli")
    records = hotpot_questions(QUESTIONS)
    questions = tmp / "questions.json"
    questions.write_text(json.dumps(records))
    corpus = tmp / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"title": d.title, "text": d.text}) + "\n"
                              for d in hotpot_documents(records)))
    runner = CliRunner(env={
        "HOPINDEX_DATA_DIR": str(tmp / "data"), "HOPINDEX_LLM_MODEL": server.config.model,
        "HOPINDEX_LLM_BASE_URL": server.base_url, "HOPINDEX_LLM_API_KEY": "test-key",
        "HOPINDEX_EMBEDDER_URL": f"openai://{server.config.embedding_model}",
        "HOPINDEX_LLM_CACHE": "off"})
    try:
        ingested = runner.invoke(main, ["ingest", "--index", "hp", "--method", "extractive",
                                        "--quiet", str(corpus)])
        assert ingested.exit_code == 0, ingested.output
        yield runner, questions
    finally:
        server.stop()


def test_eval_bridgerag_reports_every_condition(cli: tuple[CliRunner, Path],
                                                tmp_path: Path) -> None:
    """--method bridgerag runs A, B, C, merged and two bridges, each with R@5 and its LLM
    cost: 2 calls for A and merged, 3 for B, C and two bridges."""
    runner, questions = cli
    out = tmp_path / "report.json"
    ran = runner.invoke(main, ["eval", "--index", "hp", "--dataset", str(questions),
                               "--method", "bridgerag", "--json", str(out)])
    assert ran.exit_code == 0, ran.output
    report = json.loads(out.read_text())
    rows = {m["method"]: m for m in report["methods"]}
    assert list(rows) == ["bridgerag:A", "bridgerag:B", "bridgerag:C", "bridgerag:merged",
                          "bridgerag:bridges2"]
    for name, row in rows.items():
        assert row["n_questions"] == QUESTIONS
        assert 0.0 < row["recall"]["5"] <= 1.0, name
    calls = {name: row["llm"]["calls_mean"] for name, row in rows.items()}
    assert calls == {"bridgerag:A": 2.0, "bridgerag:B": 3.0, "bridgerag:C": 3.0,
                     "bridgerag:merged": 2.0, "bridgerag:bridges2": 3.0}
    assert "bridgerag:merged" in ran.output and "R@5" in ran.output


def test_query_trace_prints_the_decision_record(cli: tuple[CliRunner, Path]) -> None:
    """--trace prints bridge, entities, SVO queries, the scored pool and the top 5;
    --param reaches the method (condition B is what the record says ran)."""
    runner, _ = cli
    question = hotpot_questions(1)[0]["question"]
    ran = runner.invoke(main, ["query", "--index", "hp", "--method", "bridgerag", "--trace",
                               "--param", "condition=B", question])
    assert ran.exit_code == 0, ran.output
    for text in ("decision record", "ranked by condition B", "bridge 1:", "entities:",
                 "SVO query 1:", "fused", "judge", "found by", "top 5:"):
        assert text in ran.output, text
    shown = runner.invoke(main, ["query", "--index", "hp", "--method", "bridgerag", "--json",
                                 "--param", "extraction=merged", question])
    result = json.loads(shown.output)
    assert result["usage"]["llm_calls"] == 2 and result["trace"]["params"]["extraction"] == "merged"


def test_bad_params_exit_naming_them(cli: tuple[CliRunner, Path]) -> None:
    """A malformed --param is a usage error (2) and a value the method refuses bad input
    (65), each naming what is wrong."""
    runner, _ = cli
    malformed = runner.invoke(main, ["query", "--index", "hp", "--method", "bridgerag",
                                     "--param", "alpha", "q?"])
    assert malformed.exit_code == ExitCode.USAGE and "--param" in malformed.output
    bad = runner.invoke(main, ["query", "--index", "hp", "--method", "bridgerag",
                               "--param", "alpha=2", "q?"])
    assert bad.exit_code == ExitCode.DATA_ERROR and "params.alpha" in bad.output
