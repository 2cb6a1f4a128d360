"""``hopindex indexes list|describe|delete``, locally and through a server (``--api``):
what they print, as text and as JSON, the confirmation before a delete, and their exit
codes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hopindex.api.cli import main
from hopindex.api.client.local import LocalClient
from hopindex.api.exit_codes import ExitCode
from hopindex.api.http.keys import KeyRing, parse_env_keys
from hopindex.api.http.server import BackgroundServer
from hopindex.core.models import Job, JobKind, JobState
from hopindex.core.settings import Settings
from tests.api.conftest import corpus_file
from tests.conftest import CURIE_CORPUS, local_client

pytestmark = pytest.mark.integration

KEY = "indexes-key-0123456789abcdef"


def ingest(cli: CliRunner, index: str, tmp_path: Path) -> None:
    done = cli.invoke(main, ["ingest", "--index", index, "--quiet", str(corpus_file(tmp_path))])
    assert done.exit_code == 0, done.output


def json_error(result: Result) -> dict[str, object]:
    assert result.stdout == "", result.stdout
    error: dict[str, object] = json.loads(result.stderr.splitlines()[-1])["error"]
    return error


def test_list_and_describe_show_what_an_index_holds(cli: CliRunner, tmp_path: Path) -> None:
    """`indexes list` names each index with its method; `indexes describe` shows its
    documents, its units per kind as the store counts them and its status, as text and
    as the same JSON the HTTP API answers; a document left unfinished reads partial
    (exit 0: the index is usable) with what is missing."""
    assert cli.invoke(main, ["indexes", "list"]).stdout == "no indexes\n"
    for index in ("curie", "b-curie"):
        ingest(cli, index, tmp_path)
    listed = cli.invoke(main, ["indexes", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert [(i["name"], i["method"]) for i in json.loads(listed.stdout)] == [
        ("b-curie", "extractive"), ("curie", "extractive")]
    text = cli.invoke(main, ["indexes", "list"]).stdout.splitlines()
    assert [line.split()[:2] for line in text] == [["b-curie", "extractive"],
                                                    ["curie", "extractive"]]

    settings = Settings(data_dir=tmp_path / "data").resolved()
    with local_client(settings) as client:  # the store's own count, to compare with
        units = {k.value: n
                 for k, n in client.service.backends.state.count_units("curie").items()}
    shown = cli.invoke(main, ["indexes", "describe", "curie", "--json"])
    assert shown.exit_code == 0, shown.output
    described = json.loads(shown.stdout)
    assert (described["name"], described["method"], described["status"]) == (
        "curie", "extractive", "ready")
    assert described["documents"] == len(CURIE_CORPUS) and described["units"] == units
    assert units["passage"] == len(CURIE_CORPUS) and described["running_jobs"] == []
    plain = cli.invoke(main, ["indexes", "describe", "curie"]).stdout.splitlines()
    assert plain[0] == "index curie: ready"
    assert f"  documents: {len(CURIE_CORPUS)}" in plain
    assert "  units: " + ", ".join(f"{k} {n}" for k, n in units.items()) in plain

    with local_client(settings) as client:  # as a job that died before finalizing leaves it
        state = client.service.backends.state
        [doc] = state.get_documents("curie", ["d1"])
        state.put_documents([replace(doc, content_hash="")])
    partial = cli.invoke(main, ["indexes", "describe", "curie"])
    assert partial.exit_code == 0, partial.output
    assert partial.stdout.startswith("index curie: partial\n")
    assert "  documents not fully indexed: 1; failed items: none" in partial.stdout


def test_delete_asks_first_and_missing_indexes_exit_66(cli: CliRunner,
                                                      tmp_path: Path) -> None:
    """`indexes delete` asks on stderr; no answer (a closed stdin) or "n" exits 2 and
    keeps the index; "y" deletes it, and then describing or deleting it exits 66."""
    ingest(cli, "curie", tmp_path)
    for answer in ("", "n\n"):
        kept = cli.invoke(main, ["indexes", "delete", "curie"], input=answer)
        assert kept.exit_code == ExitCode.USAGE, kept.output
        assert "Delete index 'curie' and its 6 documents (method extractive)?" in kept.stderr
        assert "error: index 'curie' not deleted: not confirmed" in kept.stderr
        assert kept.stdout == ""
    assert "curie" in cli.invoke(main, ["indexes", "list"]).stdout

    deleted = cli.invoke(main, ["indexes", "delete", "curie"], input="y\n")
    assert deleted.exit_code == 0, deleted.output
    assert deleted.stdout == f"deleted index curie ({len(CURIE_CORPUS)} documents)\n"
    assert cli.invoke(main, ["indexes", "list", "--json"]).stdout.strip() == "[]"
    gone = cli.invoke(main, ["indexes", "describe", "curie"])
    assert gone.exit_code == ExitCode.NOT_FOUND and gone.stderr == "error: no index 'curie'\n"
    again = cli.invoke(main, ["indexes", "delete", "--yes", "--json", "curie"])
    assert again.exit_code == ExitCode.NOT_FOUND
    assert json_error(again)["code"] == "not_found"


def test_delete_with_yes_and_while_a_job_runs(cli: CliRunner, tmp_path: Path) -> None:
    """--yes deletes without asking and --json prints the deletion; an index with a
    running job is refused with 75 (retry later) naming the job, and is kept."""
    ingest(cli, "curie", tmp_path)
    with local_client(Settings(data_dir=tmp_path / "data").resolved()) as client:
        # A job as a worker records it while it runs (no owner: a worker's, not this
        # process's, so opening the service does not fail it as orphaned).
        client.service.backends.state.create_job(Job(
            job_id="running-job", index="curie", kind=JobKind.INGEST, state=JobState.RUNNING))
    busy = cli.invoke(main, ["indexes", "delete", "curie", "--yes", "--json"])
    assert busy.exit_code == ExitCode.TEMPORARY, busy.output
    error = json_error(busy)
    assert error["code"] == "index_busy" and "running-job" in str(error["message"])
    assert json.loads(cli.invoke(main, ["indexes", "describe", "curie", "--json"]).stdout)[
        "running_jobs"] == ["running-job"]

    ingest(cli, "other", tmp_path)
    deleted = cli.invoke(main, ["indexes", "delete", "other", "-y", "--json"])
    assert deleted.exit_code == 0, deleted.output
    assert json.loads(deleted.stdout) == {"name": "other", "deleted": True,
                                          "documents": len(CURIE_CORPUS)}
    assert "Delete index" not in deleted.stderr


@dataclass(frozen=True)
class Served:
    """A server, and a client of the service it serves (what the server itself sees)."""

    client: LocalClient
    url: str


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    settings = Settings(data_dir=tmp_path / "server").resolved()
    with local_client(settings) as client, \
            BackgroundServer(client.service, KeyRing(parse_env_keys(KEY))) as running:
        yield Served(client, running.url)


def test_remote_indexes_match_the_server(served: Served, tmp_path: Path) -> None:
    """Through --api: list, describe (the server's own description) and delete, the
    same output and exit codes as locally; a wrong key exits 77 and an unknown index
    66, both with the server's error code in the JSON error."""
    remote = CliRunner(env={"HOPINDEX_API_URL": served.url, "HOPINDEX_API_KEY": KEY,
                            "HOPINDEX_DATA_DIR": str(tmp_path / "local")})
    ingest(remote, "curie", tmp_path)
    listed = remote.invoke(main, ["indexes", "list", "--json"])
    assert [i["name"] for i in json.loads(listed.stdout)] == ["curie"]
    shown = remote.invoke(main, ["indexes", "describe", "curie", "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout) == served.client.indexes.describe_index("curie").as_dict()
    assert remote.invoke(main, ["indexes", "describe", "curie"]).stdout.startswith(
        "index curie: ready\n")

    missing = remote.invoke(main, ["indexes", "describe", "nothing", "--json"])
    assert missing.exit_code == ExitCode.NOT_FOUND
    assert json_error(missing)["code"] == "not_found"
    wrong = remote.invoke(main, ["indexes", "list", "--json"],
                          env={"HOPINDEX_API_KEY": "wrong-key-0123456789abcdef"})
    assert wrong.exit_code == ExitCode.NO_PERMISSION, wrong.output

    kept = remote.invoke(main, ["indexes", "delete", "curie"], input="n\n")
    assert kept.exit_code == ExitCode.USAGE
    assert [i.name for i in served.client.indexes.list_indexes()] == ["curie"]
    deleted = remote.invoke(main, ["indexes", "delete", "curie"], input="y\n")
    assert deleted.exit_code == 0, deleted.output
    assert deleted.stdout == f"deleted index curie ({len(CURIE_CORPUS)} documents)\n"
    assert served.client.indexes.list_indexes() == []
    assert not (tmp_path / "local").exists()
