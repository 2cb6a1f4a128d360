"""``hopindex document`` locally and through a server (``--api``): the same text (title,
the citation line of a document read from a file, then the text), the same ``--json``
object, and the same exit codes and JSON errors for an unknown id and index."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode
from hopindex.api.http.keys import KeyRing, parse_env_keys
from hopindex.api.http.server import BackgroundServer
from hopindex.core.settings import Settings
from tests.api.conftest import corpus_file
from tests.conftest import CURIE_CORPUS, local_client

pytestmark = pytest.mark.integration

KEY = "document-key-0123456789abcdef"
INDEX = "curie"
CHEMISTRY = "Marie Curie received the Nobel Prize in Chemistry in 1911."
NOTES = f"# Chemistry\n\n{CHEMISTRY}\n\n# Peace\n\nThe Peace Prize is awarded in Oslo.\n"


@dataclass(frozen=True)
class Shown:
    """What one ``document`` command printed and exited with."""

    exit_code: int
    stdout: str
    stderr: str


def documents(runner: CliRunner, folder: Path) -> dict[str, Shown]:
    """Ingest the Curie records and a Markdown file into INDEX, then show documents:
    a record, a file's section, one as JSON, an unknown id and an unknown index."""
    notes = folder / "notes.md"
    notes.write_text(NOTES)
    ingested = runner.invoke(main, ["ingest", "--index", INDEX, "--quiet",
                                    str(corpus_file(folder)), str(notes)])
    assert ingested.exit_code == 0, ingested.output
    commands = {
        "record": ["document", "--index", INDEX, "d0"],
        "section": ["document", "--index", INDEX, "notes.md#chemistry"],
        "json": ["document", "--index", INDEX, "--json", "notes.md#chemistry"],
        "unknown-id": ["document", "--index", INDEX, "--json", "ghost/1#x"],
        "unknown-index": ["document", "--index", "nothing", "d0"],
    }
    found = {}
    for name, args in commands.items():
        result = runner.invoke(main, args)
        found[name] = Shown(result.exit_code, result.stdout, result.stderr)
    return found


def test_local_and_remote_show_documents_alike(tmp_path: Path) -> None:
    """Locally: a record prints its title, a blank line and its text; a file's section
    its title, its citation line ([file, § section]) and its text; --json the HTTP
    API's object; an unknown id exits 66 with a JSON error on field doc_id naming it,
    an unknown index exits 66. Through a server, the very same output."""
    local = documents(CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "local")}),
                      tmp_path)
    assert local["record"] == Shown(ExitCode.OK, f"{CURIE_CORPUS[0].title}\n\n"
                                                 f"{CURIE_CORPUS[0].text}\n", "")
    assert local["section"] == Shown(ExitCode.OK,
                                     f"Chemistry\n[notes.md, § Chemistry]\n\n{CHEMISTRY}\n", "")
    shown = json.loads(local["json"].stdout)
    assert (shown["doc_id"], shown["index"], shown["text"], shown["metadata"]) == (
        "notes.md#chemistry", INDEX, CHEMISTRY, {})
    assert shown["citation"] == {"file": "notes.md", "page": None, "page_end": None,
                                 "section": "Chemistry"}
    unknown = local["unknown-id"]
    assert (unknown.exit_code, unknown.stdout) == (ExitCode.NOT_FOUND, "")
    assert json.loads(unknown.stderr) == {"error": {
        "code": "not_found", "message": f"no document 'ghost/1#x' in index {INDEX!r}",
        "exit_code": 66, "field": "doc_id"}}
    assert local["unknown-index"].exit_code == ExitCode.NOT_FOUND
    assert "no index 'nothing'" in local["unknown-index"].stderr

    # The server opens after the local commands: both are services of this process,
    # and a service binds the process's runtime while it is open.
    settings = Settings(data_dir=tmp_path / "server").resolved()
    with local_client(settings) as client, \
            BackgroundServer(client.service, KeyRing(parse_env_keys(KEY))) as server:
        remote = documents(CliRunner(env={"HOPINDEX_API_URL": server.url,
                                          "HOPINDEX_API_KEY": KEY,
                                          "HOPINDEX_DATA_DIR": str(tmp_path / "unused")}),
                           tmp_path)
    assert remote == local
    assert not (tmp_path / "unused").exists()
