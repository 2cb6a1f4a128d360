"""LLM modes on the command line, embedded: ``--llm-mode`` on ingest and repair putting
the mode on the job, ``indexes llm-mode`` showing, setting and clearing an index's
default, which a job naming no mode then runs in, and a value that is no mode refused
as a usage error naming the flag and the modes. An extractive index: no LLM is called,
whatever the mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode
from tests.api.conftest import corpus_file

pytestmark = pytest.mark.integration


@pytest.fixture
def cli(tmp_path: Path) -> CliRunner:
    return CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data")})


def _job(cli: CliRunner, *args: str) -> dict[str, object]:
    ran = cli.invoke(main, [*args, "--quiet", "--json"])
    assert ran.exit_code == 0, ran.output
    job: dict[str, object] = json.loads(ran.stdout)
    return job


def test_jobs_run_in_the_flags_mode_else_the_indexs_default(cli: CliRunner,
                                                            tmp_path: Path) -> None:
    """`ingest --llm-mode batch` puts batch on its job; `indexes llm-mode` shows no
    default, sets batch (text and JSON), and an ingest and a repair naming no mode then
    run in it while `repair --llm-mode sync` runs in sync; `jobs JOB_ID` says the mode;
    --clear removes the default, and jobs then run in HOPINDEX_LLM_MODE; an unknown
    index is 66."""
    path = str(corpus_file(tmp_path))
    first = _job(cli, "ingest", "--index", "curie", "--llm-mode", "batch", path)
    assert (first["llm_mode"], first["state"]) == ("batch", "succeeded")
    shown = cli.invoke(main, ["indexes", "llm-mode", "curie"])
    assert (shown.exit_code, shown.stdout) == (0, "index curie: no default LLM mode; its jobs "
                                                  "run in sync mode (HOPINDEX_LLM_MODE) "
                                                  "unless they name one\n")
    set_batch = cli.invoke(main, ["indexes", "llm-mode", "curie", "batch"])
    assert (set_batch.exit_code, set_batch.stdout) == (0, "index curie: default LLM mode "
                                                          "batch\n")
    as_json = cli.invoke(main, ["indexes", "llm-mode", "curie", "--json"])
    assert json.loads(as_json.stdout) == {"index": "curie", "llm_mode": "batch",
                                          "effective": "batch"}
    assert _job(cli, "ingest", "--index", "curie", path)["llm_mode"] == "batch"
    assert _job(cli, "repair", "--index", "curie")["llm_mode"] == "batch"
    repaired = _job(cli, "repair", "--index", "curie", "--llm-mode", "sync")
    assert repaired["llm_mode"] == "sync"
    described = cli.invoke(main, ["jobs", str(first["job_id"])])
    assert "LLM mode: batch" in described.stdout
    cleared = cli.invoke(main, ["indexes", "llm-mode", "curie", "--clear", "--json"])
    assert json.loads(cleared.stdout) == {"index": "curie", "llm_mode": None,
                                          "effective": "sync"}
    assert _job(cli, "repair", "--index", "curie")["llm_mode"] == "sync"
    set_by_env = cli.invoke(main, ["repair", "--index", "curie", "--quiet", "--json"],
                            env={"HOPINDEX_LLM_MODE": "batch"})
    assert json.loads(set_by_env.stdout)["llm_mode"] == "batch"
    unknown = cli.invoke(main, ["indexes", "llm-mode", "absent", "batch"])
    assert unknown.exit_code == ExitCode.NOT_FOUND


@pytest.mark.parametrize("args", [
    ("ingest", "--index", "curie", "--llm-mode", "fast", "FILE"),
    ("repair", "--index", "curie", "--llm-mode", "BATCH"),
    ("rebuild", "--index", "curie", "--llm-mode", "later"),
    ("indexes", "llm-mode", "curie", "turbo"),
])
def test_a_value_that_is_no_mode_is_a_usage_error_naming_the_modes(
        cli: CliRunner, tmp_path: Path, args: tuple[str, ...]) -> None:
    """Refused before anything runs, as a bad --split-by is: exit 2, the message names
    the flag (or the argument, by its choices) and both modes; no index is created."""
    argv = [str(corpus_file(tmp_path)) if arg == "FILE" else arg for arg in args]
    refused = cli.invoke(main, argv)
    assert refused.exit_code == ExitCode.USAGE, refused.output
    assert "'sync'" in refused.output and "'batch'" in refused.output
    assert ("--llm-mode" if "--llm-mode" in args else "[sync|batch]") in refused.output
    assert cli.invoke(main, ["indexes", "list"]).stdout == "no indexes\n"


def test_a_mode_goes_with_a_job_not_with_check(cli: CliRunner) -> None:
    """`repair --check` runs no job: a mode given with it is a usage error."""
    refused = cli.invoke(main, ["repair", "--index", "curie", "--check", "--llm-mode",
                                "batch"])
    assert refused.exit_code == ExitCode.USAGE
    assert "--llm-mode goes with the job, not with --check" in refused.output
