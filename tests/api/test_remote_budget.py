"""Budgets and dry runs through ``hopindex --api URL`` against a real server (embedded,
with the local test LLM): an ingest that pauses stops following with exit 75 and the
resume command (``--api`` included), ``jobs resume`` carries the job on on the
server, ``indexes budget`` sets the server's default, and ``ingest --dry-run``
prints the server's plan as a local dry run prints its own."""

from __future__ import annotations

import io
import json
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from hopindex.api.cli import main
from hopindex.api.cli_console import UNBOUNDED_WIDTH
from hopindex.api.client.local import LocalClient
from hopindex.api.exit_codes import ExitCode
from hopindex.api.http.keys import KeyRing, parse_env_keys
from hopindex.api.http.server import BackgroundServer
from hopindex.api.render_plan import render_plan
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.conftest import local_client
from tests.methods.indexrag.conftest import llm_settings
from tests.workers.conftest import embedder_settings, hotpot_corpus

pytestmark = pytest.mark.integration

KEY = "budget-key-0123456789abcdef"


@dataclass(frozen=True)
class Served:
    """A server, and a client of the service it serves (the server's own answers)."""

    client: LocalClient
    url: str


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    llm = LlmTestServer(LlmServerConfig()).start_in_thread()
    data = tmp_path_factory.mktemp("budget-server") / "data"
    settings = llm_settings(data, llm, **embedder_settings(llm))
    try:
        with local_client(settings) as client, \
                BackgroundServer(client.service, KeyRing(parse_env_keys(KEY))) as running:
            yield Served(client, running.url)
    finally:
        llm.stop()


@pytest.fixture
def remote(server: Served, tmp_path: Path) -> CliRunner:
    """The CLI with the key in the environment; the URL goes on the command line."""
    return CliRunner(env={"HOPINDEX_API_KEY": KEY, "HOPINDEX_DATA_DIR": str(tmp_path / "local"),
                          "COLUMNS": "200"})


def test_a_paused_remote_ingest_exits_75_and_resumes_on_the_server(
        server: Served, remote: CliRunner, tmp_path: Path) -> None:
    """`--api URL ingest --max-llm-tokens 10` stops following at the pause: the job is
    printed paused, the error line gives the reason and a resume command carrying
    `--api URL`, exit 75; that command (from the suggested limit on, as often as the
    job pauses again) resumes it on the server, and following it then exits 0."""
    corpus = hotpot_corpus(tmp_path, limit=3)
    api = ["--api", server.url]
    ingested = remote.invoke(main, [*api, "ingest", "--index", "remote", "--method",
                                    "indexrag", "--max-llm-tokens", "10", str(corpus)])
    assert ingested.exit_code == ExitCode.TEMPORARY, ingested.output
    assert "state=paused" in ingested.stdout
    error = ingested.stderr.strip().splitlines()[-1]
    assert error.startswith("error: job ") and " paused: LLM budget is below the cost" in error
    command = shlex.split(error.split("; resume with: ", 1)[1])
    job_id = command[5]
    assert command[:6] == ["hopindex", "--api", server.url, "jobs", "resume", job_id]
    assert command[6] == "--max-llm-tokens" and int(command[7]) > 10
    for _ in range(5):
        resumed = remote.invoke(main, command[1:])
        assert resumed.exit_code == 0, resumed.output
        followed = remote.invoke(main, [*api, "jobs", job_id, "--follow"])
        if followed.exit_code != ExitCode.TEMPORARY:
            break
        command = shlex.split(followed.stderr.strip().splitlines()[-1]
                              .split("; resume with: ", 1)[1])
    assert followed.exit_code == 0, followed.output
    assert server.client.jobs.get_job(job_id).state.value == "succeeded"
    again = remote.invoke(main, [*api, "jobs", "resume", job_id, "--json"])
    assert again.exit_code == ExitCode.DATA_ERROR
    assert json.loads(again.stderr.splitlines()[-1])["error"]["code"] == "job_not_paused"


def test_remote_index_budget(server: Served, remote: CliRunner,
                             tmp_path: Path) -> None:
    """`indexes budget` through the API sets, shows and clears the server's default,
    and a bad value exits 65 naming the flag before anything is sent."""
    api = ["--api", server.url]
    assert remote.invoke(main, [*api, "indexes", "budget", "nosuch"]).exit_code == \
        ExitCode.NOT_FOUND
    done = remote.invoke(main, [*api, "ingest", "--index", "budgeted", "--quiet",
                                str(hotpot_corpus(tmp_path, limit=1))])
    assert done.exit_code == 0, done.output
    set_it = remote.invoke(main, [*api, "indexes", "budget", "budgeted", "--max-llm-tokens",
                                  "70000", "--json"])
    assert json.loads(set_it.stdout) == {"index": "budgeted",
                                         "budget": {"max_llm_tokens": 70000}}
    assert server.client.indexes.get_budget("budgeted").budget == {"max_llm_tokens": 70000}
    shown = remote.invoke(main, [*api, "indexes", "budget", "budgeted"])
    assert shown.stdout == "index budgeted: default LLM budget max_llm_tokens 70,000\n"
    cleared = remote.invoke(main, [*api, "indexes", "budget", "budgeted", "--clear"])
    assert cleared.stdout == "index budgeted: no default LLM budget\n"
    assert server.client.indexes.get_budget("budgeted").budget == {}
    bad = remote.invoke(main, [*api, "indexes", "budget", "budgeted", "--max-llm-tokens", "-3"])
    assert bad.exit_code == ExitCode.DATA_ERROR and "--max-llm-tokens" in bad.stderr


def test_a_remote_dry_run_prints_the_servers_plan(
        server: Served, remote: CliRunner, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`--api URL ingest --dry-run` answers with the server's plan, as JSON equal to the
    plan a client of the server's service makes of the same file, and as the same text a local
    dry run renders; nothing is written. A file with a bad line lists it as invalid;
    one with nothing usable exits 65."""
    corpus = hotpot_corpus(tmp_path, limit=4)
    with corpus.open("a") as fh:
        fh.write("{not json\n")
    api = ["--api", server.url]
    planned = remote.invoke(main, [*api, "ingest", "--index", "planned", "--method",
                                   "indexrag", "--dry-run", "--json", str(corpus)])
    assert planned.exit_code == 0, planned.output
    plan = json.loads(planned.stdout)
    # Read by the name it is uploaded under, so the bad line is named alike.
    monkeypatch.chdir(corpus.parent)
    expected = server.client.plan_ingest("planned", [Path(corpus.name)],
                                         method="indexrag").as_dict()
    assert plan == expected
    assert plan["documents"] == {"new": 4, "changed": 0, "unchanged": 0, "invalid": 1,
                                 "removed": 0}
    assert plan["phases"][0]["calls"] > 0
    text = remote.invoke(main, [*api, "ingest", "--index", "planned", "--method", "indexrag",
                                "--dry-run", str(corpus)])
    assert text.exit_code == 0, text.output
    # As the CLI's console prints when stdout is not a terminal: unwrapped, unbounded.
    local = Console(file=io.StringIO(), width=UNBOUNDED_WIDTH, soft_wrap=True, record=True)
    render_plan(local, expected)
    assert text.stdout == local.export_text()
    assert "planned" not in [i.name for i in server.client.indexes.list_indexes()]

    empty = tmp_path / "empty.jsonl"
    empty.write_text("{not json\n")
    refused = remote.invoke(main, [*api, "ingest", "--index", "planned", "--dry-run",
                                   str(empty)])
    assert refused.exit_code == ExitCode.DATA_ERROR, refused.output
