"""A query on an index that is not fully built still answers, and says so: a ``partial``
index (documents not fully indexed, failed items) or a ``building`` one (a job running)
gives the result a warning naming the status and what completes it, in the result and
its JSON, and on the CLI's stderr (locally and through a server); a ready index gives
none, and a repair that completes the index takes the warning away."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.http.keys import KeyRing, parse_env_keys
from hopindex.api.http.server import BackgroundServer
from hopindex.api.index_health import BUILDING, PARTIAL
from hopindex.core.models import FailedItem, Job, JobKind, JobState
from hopindex.core.settings import Settings
from tests.conftest import CURIE_CORPUS, ingest_documents, local_client

pytestmark = pytest.mark.integration

QUESTION = "Where was the wife of Pierre Curie born?"
KEY = "status-key-0123456789abcdef"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """The Curie corpus ingested into index ``curie`` (ready), the client closed."""
    data = tmp_path / "data"
    with local_client(Settings(data_dir=data).resolved()) as client:
        job = ingest_documents(client, "curie", CURIE_CORPUS)
    assert job.state is JobState.SUCCEEDED, job.reason
    return data


def make_partial(data_dir: Path) -> None:
    """As a job that died before its finalize step leaves one document, and a failed
    stage-2 item of another job."""
    with local_client(Settings(data_dir=data_dir).resolved()) as client:
        state = client.service.backends.state
        [doc] = state.get_documents("curie", [sorted(state.document_hashes("curie"))[0]])
        state.put_documents([replace(doc, content_hash="")])
        state.put_failed_items("curie", [FailedItem(phase="extractive.stage2",
                                                    item="warsaw", reason="test", job_id="j")])


def test_a_ready_index_gives_no_warning(data_dir: Path) -> None:
    """The usual case: nothing to say, and the JSON says so with an empty list."""
    with local_client(Settings(data_dir=data_dir).resolved()) as client:
        result = client.query("curie", QUESTION, k=5)
    assert result.passages and result.warnings == []
    assert result.as_dict()["warnings"] == []


def test_a_partial_index_answers_with_a_warning_until_repaired(data_dir: Path) -> None:
    """Partial: the passages still come, with one warning naming the status, what is
    missing and the repair command; once a repair completes the index, the same
    client's next query has no warning (the kept status follows the index's jobs)."""
    make_partial(data_dir)
    with local_client(Settings(data_dir=data_dir).resolved()) as client:
        result = client.query("curie", QUESTION, k=5)
        assert result.passages
        [warning] = result.warnings
        assert warning.code == PARTIAL
        assert "index 'curie' is partial" in warning.message
        assert "1 document not fully indexed; 1 failed item" in warning.message
        assert "`hopindex repair --index curie`" in warning.message
        assert result.as_dict()["warnings"] == [{"code": PARTIAL, "message": warning.message}]
        assert client.query("curie", QUESTION, k=5).warnings == [warning]  # kept, still true

        job = client.indexes.repair_index("curie")
        assert job.state is JobState.SUCCEEDED, job.reason
        assert client.indexes.describe_index("curie").status == "ready"
        assert client.query("curie", QUESTION, k=5).warnings == []


def test_a_building_index_names_its_running_job(data_dir: Path) -> None:
    """Building: the warning names the running job and how to follow it; the status is
    never kept, so the job's end shows at the next query."""
    with local_client(Settings(data_dir=data_dir).resolved()) as client:
        state = client.service.backends.state
        # A job as a worker records it while it runs (no owner, so not an orphan).
        state.create_job(Job(job_id="running-job", index="curie", kind=JobKind.INGEST,
                             state=JobState.RUNNING))
        [warning] = client.query("curie", QUESTION, k=5).warnings
        assert warning.code == BUILDING
        assert "index 'curie' is building (job running-job running)" in warning.message
        assert "`hopindex jobs running-job --follow`" in warning.message

        state.update_job("running-job", lambda job: setattr(job, "state", JobState.SUCCEEDED))
        assert client.query("curie", QUESTION, k=5).warnings == []


def test_the_cli_prints_the_warning_on_stderr(data_dir: Path, tmp_path: Path) -> None:
    """``hopindex query`` exits 0 with its passages on stdout and the warning on stderr;
    with --json the warning is in the object and stderr stays quiet."""
    make_partial(data_dir)
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(data_dir)})
    shown = cli.invoke(main, ["query", "--index", "curie", QUESTION])
    assert shown.exit_code == 0, shown.output
    assert "1. " in shown.stdout
    [line] = [x for x in shown.stderr.splitlines() if x.startswith("warning:")]
    assert line.startswith("warning: index 'curie' is partial (")
    assert "run `hopindex repair --index curie`" in line

    as_json = cli.invoke(main, ["query", "--index", "curie", "--json", QUESTION])
    assert as_json.exit_code == 0, as_json.output
    assert [w["code"] for w in json.loads(as_json.stdout)["warnings"]] == [PARTIAL]
    assert "warning:" not in as_json.stderr


@pytest.fixture
def server(data_dir: Path) -> Iterator[BackgroundServer]:
    make_partial(data_dir)
    with local_client(Settings(data_dir=data_dir).resolved()) as client, \
            BackgroundServer(client.service, KeyRing(parse_env_keys(KEY))) as running:
        yield running


def test_through_a_server_the_cli_shows_the_same_warning(server: BackgroundServer,
                                                          tmp_path: Path) -> None:
    """--api: the server's result carries the warning and the load figure, and the CLI
    prints the warning as it does locally."""
    cli = CliRunner(env={"HOPINDEX_DATA_DIR": str(tmp_path / "client"),
                         "HOPINDEX_API_KEY": KEY})
    shown = cli.invoke(main, ["--api", server.url, "query", "--index", "curie", QUESTION])
    assert shown.exit_code == 0, shown.output
    assert any(x.startswith("warning: index 'curie' is partial (")
               for x in shown.stderr.splitlines())
    as_json = cli.invoke(main, ["--api", server.url, "query", "--index", "curie", "--json",
                                QUESTION])
    assert as_json.exit_code == 0, as_json.output
    body = json.loads(as_json.stdout)
    assert [w["code"] for w in body["warnings"]] == [PARTIAL]
    assert body["embedder_load_s"] >= 0.0
