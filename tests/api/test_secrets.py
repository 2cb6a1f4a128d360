"""No secret to a reader: credentials planted in an LLM base URL never reach a job
record, an event, an API error, a log line, the CLI's error or ``hopindex config``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.http.errors import from_hopindex_error
from hopindex.core.errors import BackendUnavailableError
from hopindex.core.logging import configure_logging
from hopindex.core.models import JobState
from hopindex.core.settings import Settings
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS, ingest_documents, local_client
from tests.methods.indexrag.conftest import llm_settings

PLANTED = ("planted-user", "planted-pass", "planted-token")


def planted_url(server: LlmTestServer) -> str:
    # A query string would break the paths the client appends; userinfo is what an
    # operator puts in a base URL (a proxy's credentials).
    return f"http://{PLANTED[0]}:{PLANTED[1]}@127.0.0.1:{server.port}/v1"


def assert_clean(surface: str, text: str) -> None:
    found = [p for p in PLANTED if p in text]
    assert not found, f"{surface} shows {found}: {text[:300]}"


@pytest.mark.integration
def test_a_failed_llm_job_shows_no_planted_credential(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        capsys: pytest.CaptureFixture[str]) -> None:
    """The provider refuses the key, so the job fails with a reason quoting the base URL:
    the record, its events, the API's error answer and every log line show it redacted."""
    server = start_server(api_key="the-right-key")
    settings = llm_settings(tmp_path, server, llm_base_url=planted_url(server),
                            llm_api_key="a-wrong-key", log_level="info")
    with local_client(settings) as client:
        with pytest.raises(Exception) as raised:
            ingest_documents(client, "curie", CURIE_CORPUS[:2])
        job = client.jobs.list_jobs("curie")[0]
        events = list(client.events.iterate_events("curie"))
    assert job.state is JobState.FAILED
    assert "127.0.0.1" in job.reason and "***@" in job.reason  # said where, not with what
    assert_clean("the job record", json.dumps(job.as_dict()))
    assert_clean("the events", json.dumps([e.as_dict() for e in events]))
    assert_clean("the raised error's API answer",
                 str(getattr(from_hopindex_error(raised.value), "message", "")))  # type: ignore[arg-type]
    captured = capsys.readouterr()
    with capsys.disabled():
        # The logger writes to the stream it was configured with: give it back the real
        # one before the captured stream closes (the test server logs at teardown).
        configure_logging(Settings())
    assert "***@127.0.0.1" in captured.err  # the failure was logged, redacted
    assert_clean("the logs", captured.err + captured.out)


def test_api_error_messages_and_cli_errors_redact_urls(tmp_path: Path) -> None:
    """A backend error quoting a URL answers with the URL redacted; so does the CLI."""
    error = BackendUnavailableError(f"cannot reach redis://{PLANTED[0]}:{PLANTED[1]}@cache:6379/0")
    answer = from_hopindex_error(error)
    assert answer is not None and "redis://***@cache:6379/0" in answer.message
    assert_clean("the API error", answer.message)
    result = CliRunner().invoke(main, ["config"], env={
        "HOPINDEX_DATA_DIR": str(tmp_path),
        "HOPINDEX_BROKER_URL": f"redis://{PLANTED[0]}:{PLANTED[1]}@localhost:1/0",
        "HOPINDEX_LLM_API_KEY": PLANTED[2]})
    assert result.exit_code == 0, result.output
    assert "HOPINDEX_BROKER_URL=redis://***@localhost:1/0" in result.output
    assert "HOPINDEX_LLM_API_KEY=***" in result.output
    assert_clean("hopindex config", result.output)
