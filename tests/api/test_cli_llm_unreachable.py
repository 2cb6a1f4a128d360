"""An ingest whose LLM provider cannot be reached ends within its connect give-up and
exits 69 (EX_UNAVAILABLE), every failed item naming the URL; a job where some items
landed still exits 3."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode, job_outcome
from hopindex.backends.llm.reachability import CONNECT_BACKOFF_MAX_S
from hopindex.core.models import ItemError, Job, JobKind, JobState, StageCounts
from tests.api.conftest import corpus_file

URL = "http://127.0.0.1:9/v1"
UNREACHABLE = (f"LLM extraction failed at chunk 0: indexrag.stage1: cannot reach the LLM "
               f"provider at {URL} (connection refused) after 30s")
STAGE1 = "indexrag.stage1"


def closed_port() -> int:
    """A loopback port nothing listens on: bound (so the system picked it), then closed."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


@pytest.mark.integration
def test_an_ingest_against_a_closed_port_exits_69_naming_the_url(cli: CliRunner,
                                                                  tmp_path: Path) -> None:
    """Nothing listens at the LLM base URL: the ingest ends within the give-up (0.5 s
    here) plus slack, not after the patient policy's minute, exits 69 with the
    "llm_unreachable" code, and the job's failed items and the error name the URL."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    give_up_s = 0.5
    started = time.monotonic()
    result = cli.invoke(main, ["ingest", "--index", "down", "--json",
                               str(corpus_file(tmp_path))],
                        env={"HOPINDEX_LLM_MODEL": "m", "HOPINDEX_LLM_BASE_URL": url,
                             "HOPINDEX_LLM_CONNECT_GIVE_UP_S": str(give_up_s)})
    elapsed_s = time.monotonic() - started
    assert result.exit_code == ExitCode.UNAVAILABLE, result.output
    # The process's start and an embedder's load, besides the calls: one verdict for
    # every document, each failing at once after the first (the batch shares it).
    assert elapsed_s < give_up_s + CONNECT_BACKOFF_MAX_S + 20, elapsed_s
    job = json.loads(result.stdout)
    assert job["state"] == "succeeded_with_errors" and job["errors"]
    reason = f"cannot reach the LLM provider at {url} (connection refused)"
    assert all(reason in error["reason"] for error in job["errors"]), job["errors"]
    error = json.loads(result.stderr.splitlines()[-1])["error"]
    assert error["code"] == "llm_unreachable" and error["exit_code"] == 69
    assert reason in error["message"], error


def finished(errors: list[ItemError], *, done: int, failed: int) -> Job:
    job = Job(job_id="j", index="i", kind=JobKind.INGEST,
              state=JobState.SUCCEEDED_WITH_ERRORS)
    job.counts["validate"] = StageCounts(total=done + failed + 1, done=done + failed,
                                         failed=1)
    job.counts[STAGE1] = StageCounts(total=done + failed, done=done, failed=failed)
    job.phases = {STAGE1: "documents", "indexrag.stage2": "groups"}
    job.errors = errors
    return job


def test_nothing_landed_for_an_unreachable_provider_is_69_and_names_the_url() -> None:
    """Every LLM item failed for the provider being unreachable and none landed: 69,
    with a reason naming the URL, whatever records validation refused besides."""
    job = finished([ItemError(item="bad", stage="validate", reason="no text", where="f:1"),
                    ItemError(item="a", stage=STAGE1, reason=UNREACHABLE),
                    ItemError(item="b", stage=STAGE1, reason=UNREACHABLE)], done=0, failed=2)
    outcome = job_outcome(job)
    assert (outcome.exit_code, outcome.code) == (ExitCode.UNAVAILABLE, "llm_unreachable")
    assert URL in outcome.reason and outcome.reason.startswith("2 items failed and none")


def test_some_landed_or_other_failures_stay_partial() -> None:
    """One item landed, or one failed for another reason (an invalid reply): 3, as
    documented, since the provider was reached for something."""
    landed = finished([ItemError(item="a", stage=STAGE1, reason=UNREACHABLE)],
                      done=1, failed=1)
    other = finished([ItemError(item="a", stage=STAGE1, reason=UNREACHABLE),
                      ItemError(item="b", stage=STAGE1, reason="invalid JSON")],
                     done=0, failed=2)
    only_validation = finished([ItemError(item="bad", stage="validate", reason="no text")],
                               done=1, failed=0)
    for job in (landed, other, only_validation):
        assert job_outcome(job).exit_code == ExitCode.PARTIAL, job.errors
