"""How the CLI lays its output out: piped (not a terminal) no line is wrapped and no
table cell cut; ``--width N`` lays tables out at N columns; on a terminal, its width;
``query --full`` prints passages whole; a document over the size limit is refused
naming the variable that sets it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api import cli_console
from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode
from hopindex.api.render_estimate import cost_figure
from hopindex.testing.llm_server import LlmTestServer
from tests.api.conftest import corpus_file

pytestmark = pytest.mark.integration

# The sentence under the dry run's table that says how stage 2 was planned: far
# longer than 80 columns.
STAGE2_BASIS = ("indexrag.stage2: 0 entities touched through changed documents or failed "
                "earlier; no other document of this index names an entity yet")
# A passage whose answer comes after the 100 characters `query` shows by default.
LONG_TEXT = ("Marie Curie was a physicist and chemist who conducted pioneering research on "
             "radioactivity, and she was the first woman to win a Nobel Prize. Her "
             "birthplace was the city of Warsaw, then part of the Russian Empire.")


@pytest.fixture
def cli(tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> CliRunner:
    """The CLI with an LLM and embeddings from a test server, and prices set, so the
    dry run's table has its widest form (a cost column)."""
    server = start_server()
    return CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data"),
                          "HOPINDEX_LLM_MODEL": server.config.model,
                          "HOPINDEX_LLM_BASE_URL": server.base_url,
                          "HOPINDEX_LLM_API_KEY": "test-key",
                          "HOPINDEX_EMBEDDER_URL": f"openai://{server.config.embedding_model}",
                          "HOPINDEX_LLM_PRICE_INPUT_PER_MTOK": "0.15",
                          "HOPINDEX_LLM_PRICE_OUTPUT_PER_MTOK": "0.6"})


def _dry_run(cli: CliRunner, corpus: Path, *options: str) -> str:
    result = cli.invoke(main, [*options, "ingest", "--index", "curie", "--method",
                               "indexrag", "--dry-run", str(corpus)])
    assert result.exit_code == 0, result.output
    return result.stdout


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "┃" in line or "│" in line]


def test_piped_output_is_not_wrapped_and_table_cells_are_whole(
        cli: CliRunner, tmp_path: Path) -> None:
    """Not a terminal (CliRunner's stdout) and no COLUMNS: the dry run's sentences stay
    one line each, past 80 columns, and its table keeps every cell whole (the cost as
    the plan has it, not `0.00113…`, and the headers), however wide that makes it."""
    corpus = corpus_file(tmp_path)
    shown = _dry_run(cli, corpus)
    plan = json.loads(cli.invoke(main, ["ingest", "--index", "curie", "--method", "indexrag",
                                        "--dry-run", "--json", str(corpus)]).stdout)
    assert any(line.startswith(STAGE2_BASIS) for line in shown.splitlines()), shown
    assert "…" not in shown
    stage1 = next(line for line in _table_lines(shown) if "indexrag.stage1" in line)
    assert cost_figure(plan["phases"][0]["cost"]) in stage1.split()
    assert "completion tokens" in shown and "not planned" in shown
    assert max(len(line) for line in _table_lines(shown)) > 80


def test_width_lays_tables_out_at_n_columns(cli: CliRunner, tmp_path: Path) -> None:
    """`--width 60`: the table fits 60 columns, its figures folded onto a second line
    rather than cut; piped, the sentences under it still are not wrapped."""
    shown = _dry_run(cli, corpus_file(tmp_path), "--width", "60")
    table = _table_lines(shown)
    assert max(len(line) for line in table) == 60, shown
    assert "…" not in "\n".join(table)
    assert any(line.startswith(STAGE2_BASIS) for line in shown.splitlines())
    narrow = cli.invoke(main, ["--width", "5", "config"])
    assert narrow.exit_code == ExitCode.USAGE and "--width" in narrow.stderr


def test_on_a_terminal_lines_wrap_at_its_width(
        cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal keeps rich's behaviour: everything laid out at its width (COLUMNS
    here), sentences wrapped; `--width` overrides that width."""
    monkeypatch.setattr(cli_console, "is_tty", lambda: True)
    corpus = corpus_file(tmp_path)
    shown = cli.invoke(main, ["ingest", "--index", "curie", "--method", "indexrag",
                              "--dry-run", str(corpus)], env={"COLUMNS": "70"}).stdout
    assert max(len(line) for line in shown.splitlines()) <= 70, shown
    assert "indexrag.stage2: 0 entities touched" in shown
    assert not any(line.startswith(STAGE2_BASIS) for line in shown.splitlines())
    wider = _dry_run(cli, corpus, "--width", "120")
    assert max(len(line) for line in wider.splitlines()) == 120


def test_query_full_prints_each_passage_whole(cli: CliRunner, tmp_path: Path) -> None:
    """Without --full a passage is cut at 100 characters (`[...]`), before where Marie
    Curie was born; with it the whole text: one line piped, wrapped to `--width`
    (every line within it, no word lost) otherwise."""
    corpus = tmp_path / "long.jsonl"
    corpus.write_text(json.dumps({"id": "curie", "title": "Marie Curie", "text": LONG_TEXT})
                      + "\n")
    assert cli.invoke(main, ["ingest", "--index", "long", "--quiet", str(corpus)]).exit_code == 0
    question = ["query", "--index", "long", "--k", "1", "Where was Marie Curie born?"]
    short = cli.invoke(main, question)
    assert short.exit_code == 0, short.output
    assert "[...]" in short.stdout and "Warsaw" not in short.stdout
    full = cli.invoke(main, [*question[:-1], "--full", question[-1]])
    assert full.exit_code == 0, full.output
    assert f"      {LONG_TEXT}\n" in full.stdout
    wrapped = cli.invoke(main, ["--width", "50", *question[:-1], "--full", question[-1]])
    lines = wrapped.stdout.split("score ", 1)[1].splitlines()[1:]
    assert lines and all(len(line) <= 50 and line.startswith("      ") for line in lines)
    # The passage, then the unit that found it (this method's: a summary), also whole.
    passage = lines[:next(i for i, line in enumerate(lines) if line.strip().startswith("via"))]
    assert " ".join(line.strip() for line in passage) == LONG_TEXT


def test_a_document_over_the_size_limit_names_the_variable(
        cli: CliRunner, tmp_path: Path) -> None:
    """A text file over HOPINDEX_MAX_DOCUMENT_BYTES is refused (exit 65) with the limit
    and the variable that sets it, not the settings field."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "big.txt").write_text("x" * 11)
    refused = cli.invoke(main, ["ingest", "--index", "big", "--dry-run",
                                str(tmp_path / "docs")],
                         env={"HOPINDEX_MAX_DOCUMENT_BYTES": "10"})
    assert refused.exit_code == ExitCode.DATA_ERROR, refused.output
    assert ("document 'big.txt' is 11 bytes of UTF-8 text, over the 10-byte limit "
            "(HOPINDEX_MAX_DOCUMENT_BYTES)") in refused.stderr
    assert "max_document_bytes" not in refused.output
