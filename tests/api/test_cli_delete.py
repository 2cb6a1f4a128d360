"""``hopindex delete`` locally and through a server (``--api``): the same jobs, the same
exit codes for known, partly unknown and wholly unknown ids (0, 3, 66), the same error
line, and ``--quiet`` taken by both doors."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode
from hopindex.api.http.keys import KeyRing, parse_env_keys
from hopindex.api.http.server import BackgroundServer
from hopindex.core.settings import Settings
from tests.api.conftest import corpus_file
from tests.conftest import local_client

pytestmark = pytest.mark.integration

KEY = "delete-key-0123456789abcdef"
INDEX = "curie"


@dataclass(frozen=True)
class Seen:
    """What a test compares across doors: the exit code, the job's state and the items
    it lists as errors, and the JSON error's code."""

    exit_code: int
    state: str
    errors: list[str]
    error_code: str | None


def seen(result: Result) -> Seen:
    job: dict[str, Any] = json.loads(result.stdout)
    error = json.loads(result.stderr)["error"]["code"] if result.stderr else None
    return Seen(result.exit_code, job["state"], [e["item"] for e in job["errors"]], error)


def deletes(runner: CliRunner, folder: Path) -> list[Seen]:
    """Ingest the Curie corpus into INDEX, then delete: unknown ids only, one known id
    with an unknown one, the id deleted just now again, and a known id with --quiet.
    Checks what each door must show alike on its own; returns what is compared."""
    ingested = runner.invoke(main, ["ingest", "--index", INDEX, "--quiet",
                                    str(corpus_file(folder))])
    assert ingested.exit_code == 0, ingested.output

    def delete(*args: str) -> Result:
        return runner.invoke(main, ["delete", "--index", INDEX, *args])

    nothing = delete("--json", "ghost-1", "ghost-2")
    assert nothing.exit_code == ExitCode.NOT_FOUND, nothing.output
    error = json.loads(nothing.stderr)["error"]
    assert error["exit_code"] == 66 and "nothing was deleted" in error["message"]
    as_text = delete("--quiet", "ghost-3")
    assert as_text.exit_code == ExitCode.NOT_FOUND, as_text.output
    assert as_text.stderr.startswith("error: job ") and "nothing was deleted" in as_text.stderr
    assert len(as_text.stderr.splitlines()) == 1 and "ghost-3" in as_text.stdout
    partial = delete("--json", "d0", "ghost-4")
    again = delete("--json", "d0")  # deleted by the partial delete: unknown now
    clean = delete("--json", "--quiet", "d1")
    assert clean.stderr == "", clean.stderr
    quiet = delete("--quiet", "d2")
    assert quiet.exit_code == ExitCode.OK and quiet.stderr == "", quiet.output
    return [seen(r) for r in (nothing, partial, again, clean)]


def test_local_and_remote_deletes_end_alike(tmp_path: Path) -> None:
    """Locally and through a server the same deletes end the same way: ids none of which
    names a document exit 66 (code not_found) with a job that succeeded listing each
    id; a known id with an unknown one exits 3 listing the unknown one; that id again
    exits 66; a known id exits 0, and --quiet prints no progress on stderr."""
    local = deletes(CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "local")}),
                    tmp_path)
    assert local == [
        Seen(ExitCode.NOT_FOUND, "succeeded", ["ghost-1", "ghost-2"], "not_found"),
        Seen(ExitCode.PARTIAL, "succeeded", ["ghost-4"], None),
        Seen(ExitCode.NOT_FOUND, "succeeded", ["d0"], "not_found"),
        Seen(ExitCode.OK, "succeeded", [], None),
    ]
    # The server opens after the local commands are done: both are services of this
    # process, and a service binds the process's runtime while it is open. The server
    # serves the client's service; the client reads what the deletes left in its store.
    settings = Settings(data_dir=tmp_path / "server").resolved()
    with local_client(settings) as client, \
            BackgroundServer(client.service, KeyRing(parse_env_keys(KEY))) as server:
        remote = deletes(CliRunner(env={"HOPINDEX_API_URL": server.url,
                                        "HOPINDEX_API_KEY": KEY,
                                        "HOPINDEX_DATA_DIR": str(tmp_path / "unused")}),
                         tmp_path)
        assert client.service.backends.state.get_documents(INDEX, ["d0", "d1", "d2"]) == []
    assert remote == local
    assert not (tmp_path / "unused").exists()
