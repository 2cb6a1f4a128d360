"""LLM budgets on the command line, embedded: ``ingest --max-llm-tokens/--max-cost``
refusing bad values by flag, ``indexes budget`` showing, replacing and clearing an
index's default, an ingest's flag replacing one limit of that default, and ``jobs``
showing a paused job (reason, figures, resume command) and ``jobs resume`` continuing
it with new limits. Jobs are paused on their record here (scheduler.pause.pause_job);
tests/api/test_cli_budget_pause.py pauses real ones."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hopindex.api.cli import main
from hopindex.api.client.local import LocalClient
from hopindex.api.exit_codes import ExitCode
from hopindex.backends.protocols import IndexInfo
from hopindex.core.budget import BudgetLimits
from hopindex.core.models import Job, JobState
from hopindex.core.settings import Settings
from hopindex.scheduler.pause import pause_job
from hopindex.testing.contracts.state_records import new_job
from tests.api.conftest import corpus_file
from tests.conftest import local_client

pytestmark = pytest.mark.integration

PRICES = {"HOPINDEX_LLM_PRICE_INPUT_PER_MTOK": "1", "HOPINDEX_LLM_PRICE_OUTPUT_PER_MTOK": "2"}
REASON = ("LLM budget reached: max_llm_tokens 1000: 900 spent, 0 held by calls in flight, "
          "next call needs about 400")
FIGURES = {"limits": {"max_llm_tokens": 1000}, "spent": {"tokens": 900, "cost": 0.0},
           "held": {"tokens": 0, "cost": 0.0}, "next_call": {"tokens": 400, "cost": 0.0},
           "stage": "indexrag.stage1"}


@pytest.fixture
def priced(tmp_path: Path) -> CliRunner:
    """The CLI over this test's data directory, with LLM prices (a cost limit needs them)."""
    return CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data"), **PRICES})


def _client(tmp_path: Path) -> LocalClient:
    return local_client(Settings(data_dir=tmp_path / "data", llm_price_input_per_mtok=1.0,
                             llm_price_output_per_mtok=2.0).resolved())


def _json_error(result: Result) -> dict[str, object]:
    error: dict[str, object] = json.loads(result.stderr.splitlines()[-1])["error"]
    return error


def _paused_job(tmp_path: Path, index: str = "curie") -> Job:
    """A running job of ``index`` with a 1,000-token budget, paused on it."""
    with _client(tmp_path) as client:
        job = new_job(index)
        job.state = JobState.RUNNING
        job.budget = BudgetLimits(max_llm_tokens=1000)
        client.service.backends.state.create_job(job)
        paused = pause_job(client.service.runtime, job.job_id, REASON, FIGURES)
        assert paused is not None and paused.state is JobState.PAUSED
        return paused


def test_bad_budget_values_exit_65_naming_the_flag(cli: CliRunner, tmp_path: Path) -> None:
    """A negative, fractional or non-numeric limit is refused before anything runs:
    exit 65, the message and the JSON field name the flag, and no index is created."""
    path = corpus_file(tmp_path)
    for flag, value in (("--max-llm-tokens", "-5"), ("--max-llm-tokens", "1.5"),
                        ("--max-llm-tokens", "many"), ("--max-cost", "-1"),
                        ("--max-cost", "nan"), ("--max-cost", "cheap")):
        refused = cli.invoke(main, ["ingest", "--index", "curie", flag, value, "--json",
                                    str(path)])
        assert refused.exit_code == ExitCode.DATA_ERROR, (flag, value, refused.output)
        error = _json_error(refused)
        assert error["field"] == flag and str(error["message"]).startswith(f"{flag}: ")
        assert refused.stdout == ""
        text = cli.invoke(main, ["ingest", "--index", "curie", flag, value, str(path)])
        assert text.exit_code == ExitCode.DATA_ERROR
        assert text.stderr.startswith(f"error: {flag}: must be")
    resumed = cli.invoke(main, ["jobs", "resume", "some-job", "--max-cost", "-2"])
    assert resumed.exit_code == ExitCode.DATA_ERROR and "--max-cost" in resumed.stderr
    assert cli.invoke(main, ["indexes", "list"]).stdout == "no indexes\n"


def test_index_budget_is_shown_replaced_and_cleared(priced: CliRunner, tmp_path: Path) -> None:
    """`indexes budget` shows no default at first, sets both limits, replaces them whole
    (a limit not given is removed), clears with --clear, as text and JSON; the stored
    index options hold it; an unknown index is 66, --clear with a limit is a usage
    error, a cost limit without prices is refused naming max_cost."""
    with _client(tmp_path) as client:
        # Options of its own beside the budget: setting the budget must keep them.
        client.service.backends.state.create_index(IndexInfo(
            name="wiki", method="extractive", created_at=time.time(), options={"keep": 1}))
    shown = priced.invoke(main, ["indexes", "budget", "wiki"])
    assert (shown.exit_code, shown.stdout) == (0, "index wiki: no default LLM budget\n")
    set_both = priced.invoke(main, ["indexes", "budget", "wiki", "--max-llm-tokens", "50000",
                                    "--max-cost", "2.5"])
    assert set_both.exit_code == 0, set_both.output
    assert set_both.stdout == ("index wiki: default LLM budget max_llm_tokens 50,000, "
                               "max_cost 2.5\n")
    as_json = priced.invoke(main, ["indexes", "budget", "wiki", "--json"])
    assert json.loads(as_json.stdout) == {
        "index": "wiki", "budget": {"max_llm_tokens": 50000, "max_cost": 2.5}}
    replaced = priced.invoke(main, ["indexes", "budget", "wiki", "--max-cost", "3", "--json"])
    assert json.loads(replaced.stdout)["budget"] == {"max_cost": 3.0}
    with _client(tmp_path) as client:
        info = client.service.backends.state.get_index("wiki")
        assert info is not None and info.options == {"keep": 1, "budget": {"max_cost": 3.0}}
    both = priced.invoke(main, ["indexes", "budget", "wiki", "--clear", "--max-cost", "1"])
    assert both.exit_code == ExitCode.USAGE
    cleared = priced.invoke(main, ["indexes", "budget", "wiki", "--clear"])
    assert cleared.stdout == "index wiki: no default LLM budget\n"
    with _client(tmp_path) as client:
        info = client.service.backends.state.get_index("wiki")
        assert info is not None and info.options == {"keep": 1}
    missing = priced.invoke(main, ["indexes", "budget", "nosuch", "--max-cost", "1"])
    assert missing.exit_code == ExitCode.NOT_FOUND
    unpriced = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "data")})
    refused = unpriced.invoke(main, ["indexes", "budget", "wiki", "--max-cost", "1", "--json"])
    assert refused.exit_code == ExitCode.DATA_ERROR
    assert _json_error(refused)["field"] == "max_cost"


def test_an_ingest_flag_replaces_one_limit_of_the_default(priced: CliRunner,
                                                          tmp_path: Path) -> None:
    """With an index default of 50,000 tokens and cost 2, `ingest --max-llm-tokens 800`
    runs with 800 tokens and cost 2; an ingest with no flag gets the default; an
    extractive job calls no LLM, so both succeed with the budget on their record, shown
    by `jobs JOB_ID` and the jobs list."""
    path = corpus_file(tmp_path)
    first = priced.invoke(main, ["ingest", "--index", "curie", "--quiet", "--json", str(path)])
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["budget"] == {}
    budget = priced.invoke(main, ["indexes", "budget", "curie", "--max-llm-tokens", "50000",
                                  "--max-cost", "2"])
    assert budget.exit_code == 0, budget.output
    path.write_text(path.read_text() + json.dumps({"id": "new", "title": "New",
                                                   "text": "A new document."}) + "\n")
    flagged = priced.invoke(main, ["ingest", "--index", "curie", "--quiet", "--json",
                                   "--max-llm-tokens", "800", str(path)])
    assert flagged.exit_code == 0, flagged.output
    job = json.loads(flagged.stdout)
    assert job["state"] == "succeeded"
    assert job["budget"] == {"max_llm_tokens": 800, "max_cost": 2.0}
    default = priced.invoke(main, ["ingest", "--index", "curie", "--quiet", "--json",
                                   str(path)])
    assert json.loads(default.stdout)["budget"] == {"max_llm_tokens": 50000, "max_cost": 2.0}
    shown = priced.invoke(main, ["jobs", job["job_id"]])
    assert "LLM budget: max_llm_tokens 800, max_cost 2" in shown.stdout
    listed = priced.invoke(main, ["jobs"])
    line = next(row for row in listed.stdout.splitlines() if row.startswith(job["job_id"]))
    assert line.endswith("budget: max_llm_tokens 800, max_cost 2")


def test_jobs_shows_a_paused_job_and_resume_continues_it(priced: CliRunner,
                                                         tmp_path: Path) -> None:
    """A paused job reads paused in the list with its reason; `jobs JOB_ID` shows the
    reason, the spent/held/next-call figures and the resume command, whose suggested
    limit (2,000: twice the limit that refused) `jobs resume` takes; the job is then
    running with that budget, its pause cleared; resuming it again is 65, an unknown
    job 66, and budget flags without `resume` a usage error."""
    job = _paused_job(tmp_path)
    listed = priced.invoke(main, ["jobs"])
    row = next(r for r in listed.stdout.splitlines() if r.startswith(job.job_id))
    assert " paused " in row and row.endswith(f"paused: {REASON}")
    shown = priced.invoke(main, ["jobs", job.job_id])
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert f"job {job.job_id} [ingest] index=curie state=paused" in lines[0]
    assert f"reason: {REASON}" in lines
    assert any(line.startswith("paused ") and line.endswith("(max_llm_tokens 1,000)")
               for line in lines)
    assert ("  spent 900 tokens; held by calls in flight 0 tokens; the next call needs "
            "about 400 tokens") in lines
    command = f"hopindex jobs resume {job.job_id} --max-llm-tokens 2000"
    assert f"  resume with: {command}" in lines
    as_json = json.loads(priced.invoke(main, ["jobs", job.job_id, "--json"]).stdout)
    assert as_json["state"] == "paused" and as_json["pause"] == FIGURES
    assert as_json["budget"] == {"max_llm_tokens": 1000} and as_json["paused_at"]

    misplaced = priced.invoke(main, ["jobs", job.job_id, "--max-cost", "1"])
    assert misplaced.exit_code == ExitCode.USAGE
    resumed = priced.invoke(main, [*command.split()[1:], "--json"])
    assert resumed.exit_code == 0, resumed.output
    record = json.loads(resumed.stdout)
    assert record["state"] == "running" and record["budget"] == {"max_llm_tokens": 2000}
    assert record["pause"] == {} and record["paused_at"] is None and record["reason"] == ""
    again = priced.invoke(main, ["jobs", "resume", job.job_id, "--json"])
    assert again.exit_code == ExitCode.DATA_ERROR
    error = _json_error(again)
    assert error["field"] == "job_id" and "not paused" in str(error["message"])
    unknown = priced.invoke(main, ["jobs", "resume", "no-such-job"])
    assert unknown.exit_code == ExitCode.NOT_FOUND


def test_following_a_paused_job_stops_with_75(priced: CliRunner, tmp_path: Path) -> None:
    """`jobs JOB_ID --follow` does not run the job: it stops at the pause, prints the
    job, and exits 75 with an error line holding the reason and the resume command."""
    job = _paused_job(tmp_path)
    followed = priced.invoke(main, ["jobs", job.job_id, "--follow"])
    assert followed.exit_code == ExitCode.TEMPORARY, followed.output
    assert "state=paused" in followed.stdout
    error = followed.stderr.strip().splitlines()[-1]
    assert error == (f"error: job {job.job_id} paused: {REASON}; resume with: hopindex jobs "
                     f"resume {job.job_id} --max-llm-tokens 2000")
    as_json = priced.invoke(main, ["jobs", job.job_id, "--follow", "--json"])
    assert as_json.exit_code == ExitCode.TEMPORARY
    assert _json_error(as_json)["code"] == "job_paused"
