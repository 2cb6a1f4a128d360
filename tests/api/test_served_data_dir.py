"""CLI commands on the data dir of a running ``hopindex serve`` (a real process holding
the embedded engines): those that open the engines go through the server, saying so in
one line, and give what they give locally (an export the same file, an import's refusal
the same error); where they cannot (the server needs a key none was given, the command
runs only here) they exit 69 with one line naming the server and the way out, having
stored nothing. The served
index stays ready throughout, a second server on the data dir is refused, and the
record of a killed server is ignored."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from hopindex.api.cli import main
from hopindex.api.client.remote import RemoteClient
from hopindex.api.exit_codes import ExitCode
from hopindex.api.server_record import record_path
from hopindex.core.models import JobState
from hopindex.core.settings import Settings
from hopindex.testing.llm_server import LlmTestServer

# The module's test server (a fixture, imported to be used by name).
from tests.api.http.conftest import llm  # noqa: F401
from tests.conftest import CURIE_CORPUS, ingest_documents, local_client
from tests.workers.test_engine_owner import serving

pytestmark = pytest.mark.integration

INDEX = "curie"
KEY = "served-key-0123456789abcdef"


@dataclass(frozen=True)
class Served:
    settings: Settings
    data_dir: Path
    local_export: Path
    local_summary: dict[str, Any]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, llm: LlmTestServer) -> Served:  # noqa: F811
    """A data dir holding index ``curie`` (four documents, extractive), and its export
    written locally before any server ran. Embeddings come from the test server: no
    process here loads a model."""
    root = tmp_path_factory.mktemp("served")
    settings = Settings(data_dir=root / "data", llm_base_url=llm.base_url,
                        llm_api_key="test-key",
                        embedder_url=f"openai://{llm.config.embedding_model}").resolved()
    with local_client(settings) as client:
        job = ingest_documents(client, INDEX, CURIE_CORPUS[:4])
        assert job.state is JobState.SUCCEEDED and not job.errors, job.reason
        summary = client.indexes.export_index(INDEX, root / "local.jsonl")
    return Served(settings, settings.data_dir.resolve(), root / "local.jsonl",
                  summary.as_dict())


def run(served: Served, *args: str, **env: str) -> Result:
    return CliRunner(env={**served.settings.to_env(), **env}).invoke(main, list(args))


def document_file(tmp_path: Path, at: int) -> Path:
    path = tmp_path / f"doc{at}.jsonl"
    path.write_text(json.dumps({"id": f"d{at}", "title": CURIE_CORPUS[at].title,
                                "text": CURIE_CORPUS[at].text}) + "\n")
    return path


def described(served: Served) -> dict[str, Any]:
    """The index as `indexes describe` shows it here: state only, never through the
    server, and without a word on stderr about one."""
    result = run(served, "indexes", "describe", INDEX, "--json")
    assert result.exit_code == 0 and result.stderr == "", result.output
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def test_commands_go_through_the_server(served: Served, tmp_path: Path) -> None:
    """query, export, ingest and import run on the server, each saying so in one line on
    stderr (a JSON object with --json); the export is the local export's file; the
    import of an index the server has is refused as it is here (65); quickstart, which
    runs only here, exits 69 in one line; the index ends ready with the new document; a
    second server is refused; the record goes when the server stops."""
    before = described(served)["documents"]
    with serving(served.settings, tmp_path / "serve.log") as (process, url):
        through = (f"the data dir {served.data_dir} is in use by `hopindex serve` (pid "
                   f"{process.process.pid}, {url})")
        asked = run(served, "query", "--index", INDEX, "Where was Marie Curie born?")
        assert asked.exit_code == 0, asked.output
        assert asked.stderr.splitlines()[0] == (f"note: {through}: this command goes "
                                                f"through it, as with --api {url}")
        assert "Marie Curie" in asked.stdout

        exported = tmp_path / "remote.jsonl.gz"
        result = run(served, "export", "--index", INDEX, str(exported))
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout) == served.local_summary
        assert gzip.decompress(exported.read_bytes()) == served.local_export.read_bytes()

        ingested = run(served, "ingest", "--index", INDEX, "--json",
                       str(document_file(tmp_path, 4)))
        assert ingested.exit_code == 0, ingested.output
        [note] = ingested.stderr.splitlines()
        assert json.loads(note) == {
            "event": "served_data_dir", "url": url, "pid": process.process.pid,
            "data_dir": str(served.data_dir),
            "message": f"{through}: this command goes through it, as with --api {url}"}
        assert json.loads(ingested.stdout)["state"] == "succeeded"

        imported = run(served, "import", str(served.local_export))
        assert imported.exit_code == ExitCode.DATA_ERROR, imported.output
        assert imported.stderr.splitlines()[0] == (f"note: {through}: this command goes "
                                                   f"through it, as with --api {url}")
        assert f"index {INDEX!r} exists here" in imported.stderr

        here_only = run(served, "quickstart", "--index", "sample")
        assert here_only.exit_code == ExitCode.UNAVAILABLE
        assert here_only.stderr == (f"error: {through}: stop it first: `hopindex "
                                    "quickstart` does not run through a server\n")

        second = subprocess.run(
            [sys.executable, "-c", "from hopindex.api.cli import main; main()", "serve",
             "--port", "0"], env={**os.environ, **served.settings.to_env()},
            capture_output=True, text=True, timeout=120, check=False)
        assert second.returncode == ExitCode.UNAVAILABLE, second.stderr
        assert second.stderr.splitlines() == [
            f"error: {through}: stop it, or serve another data dir (HOPINDEX_DATA_DIR)"]

        view = described(served)
        assert (view["status"], view["documents"]) == ("ready", before + 1)
        assert RemoteClient(url).indexes.describe_index(INDEX).status == "ready"
    assert not record_path(served.settings).exists()


def test_a_server_that_needs_a_key(served: Served, tmp_path: Path) -> None:
    """Without HOPINDEX_API_KEY, query, ingest and export exit 69 in one line naming the
    server and the way out, storing and writing nothing; with it, the ingest goes
    through. Once the server is killed its record stays, stale, and a query runs here."""
    keyed = replace(served.settings, api_keys=KEY)
    before = described(served)["documents"]
    with serving(keyed, tmp_path / "serve.log") as (process, url):
        refusal = (f"error: the data dir {served.data_dir} is in use by `hopindex serve` "
                   f"(pid {process.process.pid}, {url}): stop it, or run this command with "
                   f"--api {url} and its API key in HOPINDEX_API_KEY\n")
        new = str(document_file(tmp_path, 5))
        exported = tmp_path / "refused.jsonl"
        for argv in (["query", "--index", INDEX, "Where was Marie Curie born?"],
                     ["ingest", "--index", INDEX, new],
                     ["export", "--index", INDEX, str(exported)]):
            result = run(served, *argv)
            assert result.exit_code == ExitCode.UNAVAILABLE, (argv, result.output)
            assert (result.stderr, result.stdout) == (refusal, ""), argv
        assert not exported.exists()
        view = described(served)
        assert (view["status"], view["documents"]) == ("ready", before)

        ingested = run(served, "ingest", "--index", INDEX, "--json", new,
                       HOPINDEX_API_KEY=KEY)
        assert ingested.exit_code == 0, ingested.output
        view = described(served)
        assert (view["status"], view["documents"]) == ("ready", before + 1)

        process.kill()
        assert record_path(served.settings).exists()
        local = run(served, "query", "--index", INDEX, "--json", "Where was Curie born?")
        assert local.exit_code == 0, local.output
        assert "in use by" not in local.stderr
        assert json.loads(local.stdout)["passages"]
