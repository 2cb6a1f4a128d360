"""The CLI's exit codes and error output: each kind of failure exits with its
documented code, the error is one unwrapped line on stderr, or with --json one JSON
object there, and stdout stays empty of it."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from hopindex.api.cli import main
from hopindex.api.cli_errors import ErrorReportingGroup
from hopindex.api.cli_support import handle_errors
from hopindex.api.exit_codes import ExitCode
from hopindex.backends.events.sqlite_log import SqliteEventLog
from hopindex.core.events import EventType

LONG_ID = "job-" + "x" * 120  # longer than any console: rich would break it


def json_error(result: Result) -> dict[str, object]:
    """The one JSON error object on stderr, checked to be alone there and on no stdout."""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert result.stdout == ""
    error: dict[str, object] = json.loads(lines[0])["error"]
    assert error["exit_code"] == result.exit_code
    return error


@pytest.mark.integration
def test_not_found_is_one_unwrapped_line_or_one_json_object(cli: CliRunner) -> None:
    """An unknown job exits 66 with `error: no job '…'` as one line on stderr, however
    long (rich used to wrap it at 80 columns when piped); with --json, one JSON object
    with the HTTP API's code."""
    text = cli.invoke(main, ["jobs", LONG_ID], env={"COLUMNS": "40"})
    assert text.exit_code == ExitCode.NOT_FOUND, text.output
    assert text.stderr == f"error: no job {LONG_ID!r}\n" and text.stdout == ""
    as_json = cli.invoke(main, ["jobs", LONG_ID, "--json"])
    assert as_json.exit_code == ExitCode.NOT_FOUND
    assert json_error(as_json) == {"code": "not_found", "message": f"no job {LONG_ID!r}",
                                   "exit_code": 66}


def test_usage_errors_exit_2_and_come_out_as_json_with_json(cli: CliRunner) -> None:
    """A command line that does not parse exits 2 before anything opens: click's usage
    text, or, when the command was given --json, a JSON error (code "usage") whether
    the problem is a missing argument, an unknown option or a bad value."""
    text = cli.invoke(main, ["indexes", "describe"])
    assert text.exit_code == ExitCode.USAGE
    assert "Usage: " in text.stderr and "Missing argument 'NAME'" in text.stderr
    for argv, message in ((["indexes", "describe", "--json"], "Missing argument 'NAME'"),
                          (["query", "--json", "--index", "x", "--bogus", "q"],
                           "No such option"),
                          (["query", "--index", "x", "--k", "0", "--json", "q"], "--k"),
                          (["query", "--index", "x", "--param", "alpha", "--json", "q"],
                           "expected KEY=VALUE, got 'alpha'")):
        result = cli.invoke(main, argv)
        assert result.exit_code == ExitCode.USAGE, (argv, result.output)
        error = json_error(result)
        assert error["code"] == "usage" and message in str(error["message"]), (argv, error)
    # A word after -- is an argument, not the flag.
    after = cli.invoke(main, ["indexes", "describe", "--bogus", "--", "--json"])
    assert after.exit_code == ExitCode.USAGE and "Usage: " in after.stderr


@pytest.mark.integration
def test_following_a_job_exits_with_its_outcome(cli: CliRunner, tmp_path: Path) -> None:
    """`jobs JOB_ID --follow` exits as the ingest that ran the job did: 3 for a job
    with a failed line, 0 for a clean one; without --follow, showing a job exits 0."""
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "a", "title": "A", "text": "Alpha text."}) + "\n{oops\n")
    partial = cli.invoke(main, ["ingest", "--index", "part", "--json", str(path)])
    assert partial.exit_code == ExitCode.PARTIAL, partial.output
    job_id = json.loads(partial.stdout)["job_id"]
    followed = cli.invoke(main, ["jobs", job_id, "--follow", "--json"])
    assert followed.exit_code == ExitCode.PARTIAL, followed.output
    assert json.loads(followed.stdout)["job_id"] == job_id and followed.stderr == ""
    assert cli.invoke(main, ["jobs", job_id]).exit_code == 0
    path.write_text(json.dumps({"id": "b", "title": "B", "text": "Beta text."}) + "\n")
    clean = cli.invoke(main, ["ingest", "--index", "part", "--json", str(path)])
    assert clean.exit_code == 0, clean.output
    again = cli.invoke(main, ["jobs", json.loads(clean.stdout)["job_id"], "--follow"])
    assert again.exit_code == 0, again.output


@pytest.mark.integration
def test_bad_input_exits_65_naming_the_field(cli: CliRunner) -> None:
    """An invalid index name is a data error: 65, the JSON error naming the field."""
    text = cli.invoke(main, ["query", "--index", "../x", "q"])
    assert text.exit_code == ExitCode.DATA_ERROR
    assert text.stderr.startswith("error: index: invalid index name '../x'")
    error = json_error(cli.invoke(main, ["query", "--index", "../x", "--json", "q"]))
    assert (error["code"], error["field"]) == ("invalid_input", "index")


def test_events_from_a_trimmed_id_exit_66_naming_the_oldest_kept(tmp_path: Path) -> None:
    """``events --from`` an id whose successors the log's retention trimmed exits 66
    (events_gone); the JSON error names ``from``, the id, the oldest id kept and the
    retention, so a script can start again from what is left."""
    data = tmp_path / "data"
    log = SqliteEventLog(data / "events.sqlite3", retention=2)
    events = [log.append_event(EventType.JOB_PROGRESS, "wiki", "job-1", {"n": n})
              for n in range(5)]
    log.close()
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(data), "HOPINDEX_EVENT_RETENTION": "2"})
    text = cli.invoke(main, ["events", "--from", events[0].event_id])
    assert text.exit_code == ExitCode.NOT_FOUND
    assert text.stderr.startswith(f"error: from: the events after {events[0].event_id} were")
    error = json_error(cli.invoke(main, ["events", "--from", events[0].event_id, "--json"]))
    assert (error["code"], error["field"], error["after_id"], error["oldest_id"],
            error["retention"]) == ("events_gone", "from", events[0].event_id,
                                    events[-2].event_id, 2)


def test_a_bad_setting_exits_78_naming_the_variable(tmp_path: Path) -> None:
    """A HOPINDEX_* variable with a bad value is a configuration error: 78."""
    env = {"HOPINDEX_DATA_DIR": str(tmp_path), "HOPINDEX_EXTRACTIVE_TAU": "x"}
    result = CliRunner(env=env).invoke(main, ["config", "--json"])
    assert result.exit_code == ExitCode.CONFIG
    error = json_error(result)
    assert error["code"] == "not_configured" and "HOPINDEX_EXTRACTIVE_TAU" in str(
        error["message"])


@pytest.mark.integration
def test_an_unreachable_service_exits_69(cli: CliRunner) -> None:
    """A state store that refuses connections, and an API server nobody listens on,
    both exit 69 (unavailable) with the address in the one-line message."""
    redis = cli.invoke(main, ["jobs"], env={"HOPINDEX_STATE_URL": "redis://127.0.0.1:1/0"})
    assert redis.exit_code == ExitCode.UNAVAILABLE, redis.output
    [line] = [ln for ln in redis.stderr.splitlines() if ln.startswith("error: ")]
    assert "redis://127.0.0.1:1/0 is unreachable" in line
    api = cli.invoke(main, ["--api", "http://127.0.0.1:1", "indexes", "list", "--json"])
    assert api.exit_code == ExitCode.UNAVAILABLE
    error = json_error(api)
    assert error["code"] == "unreachable" and "http://127.0.0.1:1" in str(error["message"])


@click.group(cls=ErrorReportingGroup)
def probe() -> None:
    """A root like hopindex's, with commands that fail in the ways no real command
    should, to see how the error handling ends them."""


@probe.command()
@click.option("--json", "as_json", is_flag=True)
@handle_errors
def crash(as_json: bool) -> None:
    raise KeyError("a\nbug")


@probe.command()
@handle_errors
def interrupt() -> None:
    raise KeyboardInterrupt


def test_an_unexpected_exception_exits_1_with_one_line(tmp_path: Path) -> None:
    """An exception of no kind hopindex raises (a bug) exits 1 (internal) with its type
    and message on one line and no traceback, or as JSON; HOPINDEX_LOG_LEVEL=debug
    adds the traceback."""
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path)})
    text = cli.invoke(probe, ["crash"])
    assert text.exit_code == ExitCode.INTERNAL
    assert text.stderr == ("error: unexpected KeyError: 'a\\nbug' (HOPINDEX_LOG_LEVEL=debug "
                           "prints the traceback)\n")
    error = json_error(cli.invoke(probe, ["crash", "--json"]))
    assert error["code"] == "internal" and "KeyError" in str(error["message"])
    debug = cli.invoke(probe, ["crash"], env={"HOPINDEX_LOG_LEVEL": "debug"})
    assert debug.exit_code == ExitCode.INTERNAL
    assert debug.stderr.startswith("Traceback") and 'raise KeyError("a\\nbug")' in debug.stderr
    assert debug.stderr.splitlines()[-1].startswith("error: unexpected KeyError")


def test_ctrl_c_exits_130() -> None:
    """Ctrl-C ends a command with 130 (128 + SIGINT), not click's 1, which reads as a
    failure of the command."""
    result = CliRunner().invoke(probe, ["interrupt"])
    assert result.exit_code == ExitCode.INTERRUPTED
    assert result.stderr == "interrupted\n"
