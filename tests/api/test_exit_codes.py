"""The exit codes: distinct values where sysexits(3) has them, every kind of
hopindex's own error mapped to one, a server's error answers mapped as the same error
raised locally would be, and a waited-for job's outcome mapped by its state."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopindex.api.cli_errors import one_line
from hopindex.api.client.http_wire import RemoteApiError, RemoteUnavailableError
from hopindex.api.exit_codes import ExitCode, job_outcome, outcome_of
from hopindex.api.http.errors import from_hopindex_error
from hopindex.backends.engine_lock import EnginesOwnedError
from hopindex.core.errors import (
    SERVER_FAULT,
    BackendError,
    BackendUnavailableError,
    ConfigError,
    EventsGoneError,
    HopindexError,
    IndexBusyError,
    InvalidIndexNameError,
    InvalidInputError,
    JobCancelledError,
    JobFailedError,
    JobFinishedError,
    LlmAuthenticationError,
    LlmOutputError,
    LlmUnavailableError,
    NotFoundError,
    PermanentStageError,
    error_types,
)
from hopindex.core.models import ItemError, Job, JobKind, JobState, StageCounts


def test_codes_follow_sysexits_and_are_distinct() -> None:
    """The codes a script tests for have the sysexits(3) values (EX_DATAERR 65,
    EX_NOINPUT 66, EX_UNAVAILABLE 69, EX_TEMPFAIL 75, EX_NOPERM 77, EX_CONFIG 78), 2 is
    click's usage code, and no two outcomes share a value."""
    assert (ExitCode.OK, ExitCode.INTERNAL, ExitCode.USAGE, ExitCode.PARTIAL) == (0, 1, 2, 3)
    assert (ExitCode.DATA_ERROR, ExitCode.NOT_FOUND, ExitCode.UNAVAILABLE) == (65, 66, 69)
    assert (ExitCode.TEMPORARY, ExitCode.NO_PERMISSION, ExitCode.CONFIG) == (75, 77, 78)
    assert int(ExitCode.INTERRUPTED) == 130
    assert len({int(code) for code in ExitCode}) == len(ExitCode)


@pytest.mark.parametrize(("error", "exit_code", "code"), [
    (InvalidInputError("bad", where="f.jsonl:3"), ExitCode.DATA_ERROR, "invalid_input"),
    (InvalidIndexNameError("bad name", where="index"), ExitCode.DATA_ERROR, "invalid_input"),
    (JobFinishedError("already succeeded", where="job_id"), ExitCode.DATA_ERROR,
     "job_finished"),
    (NotFoundError("no index 'x'"), ExitCode.NOT_FOUND, "not_found"),
    (EventsGoneError("3", "8", 5), ExitCode.NOT_FOUND, "events_gone"),
    (IndexBusyError("running jobs"), ExitCode.TEMPORARY, "index_busy"),
    (JobCancelledError("cancelled"), ExitCode.TEMPORARY, "job_cancelled"),
    (ConfigError("HOPINDEX_X"), ExitCode.CONFIG, "not_configured"),
    (LlmAuthenticationError("key refused"), ExitCode.CONFIG, "llm_refused"),
    (BackendUnavailableError("redis down"), ExitCode.UNAVAILABLE, "unavailable"),
    (EnginesOwnedError("qdrant", Path("/data/vectors"), None), ExitCode.UNAVAILABLE,
     "unavailable"),
    (LlmUnavailableError("429s"), ExitCode.UNAVAILABLE, "unavailable"),
    (LlmOutputError("bad reply"), ExitCode.UNAVAILABLE, "upstream_failed"),
    (PermanentStageError("failed"), ExitCode.UNAVAILABLE, "upstream_failed"),
    (BackendError("engine failed"), ExitCode.UNAVAILABLE, "backend_failed"),
    (JobFailedError("unexpected KeyError"), ExitCode.INTERNAL, "job_failed"),
    (HopindexError("of no kind"), ExitCode.INTERNAL, "internal"),
], ids=lambda value: type(value).__name__ if isinstance(value, Exception) else None)
def test_each_error_kind_has_its_exit_code(error: HopindexError, exit_code: ExitCode,
                                           code: str) -> None:
    """The most specific kind decides: a subclass exits as its own kind says (an LLM
    key refused is a configuration error, not only a ConfigError by inheritance)."""
    outcome = outcome_of(error)
    assert (outcome.exit_code, outcome.code) == (exit_code, code)


@pytest.mark.parametrize(("error", "exit_code"), [
    (RemoteApiError(400, "invalid_input", "bad"), ExitCode.DATA_ERROR),
    (RemoteApiError(413, "too_large", "big"), ExitCode.DATA_ERROR),
    (RemoteApiError(401, "unauthorized", "key not valid"), ExitCode.NO_PERMISSION),
    (RemoteApiError(403, "forbidden", "read key"), ExitCode.NO_PERMISSION),
    (RemoteApiError(404, "not_found", "no index"), ExitCode.NOT_FOUND),
    (RemoteApiError(410, "events_gone", "trimmed"), ExitCode.NOT_FOUND),
    (RemoteApiError(409, "index_busy", "running jobs"), ExitCode.TEMPORARY),
    (RemoteApiError(429, "busy", "a job runs in this server"), ExitCode.TEMPORARY),
    (RemoteApiError(429, "too_many_streams", "streams open"), ExitCode.TEMPORARY),
    (RemoteApiError(409, "job_finished", "already succeeded"), ExitCode.DATA_ERROR),
    (RemoteApiError(422, "not_configured", "no LLM"), ExitCode.CONFIG),
    (RemoteApiError(502, "llm_refused", "key refused"), ExitCode.CONFIG),
    (RemoteApiError(502, "upstream_failed", "bad reply"), ExitCode.UNAVAILABLE),
    (RemoteApiError(500, "internal", "server bug"), ExitCode.UNAVAILABLE),
    (RemoteUnavailableError(503, "unavailable", "busy"), ExitCode.UNAVAILABLE),
    (RemoteUnavailableError(0, "unreachable", "cannot reach"), ExitCode.UNAVAILABLE),
])
def test_remote_errors_exit_as_the_same_error_raised_locally(error: RemoteApiError,
                                                             exit_code: ExitCode) -> None:
    """In remote mode the server's answer (code first, then HTTP status) gives the code
    its error would have locally; the server's own code is the one --json prints."""
    outcome = outcome_of(error)
    assert (outcome.exit_code, outcome.code) == (exit_code, error.code)


def _job(state: JobState, *, errors: int = 0, validate: StageCounts | None = None) -> Job:
    job = Job(job_id="j1", index="i", kind=JobKind.INGEST, state=state, reason="why")
    job.errors = [ItemError(stage="validate", item=f"d{n}", reason="bad")
                  for n in range(errors)]
    if validate is not None:
        job.counts["validate"] = validate
    return job


def test_a_jobs_outcome_is_its_commands_exit_code() -> None:
    """Succeeded: 0; some items failed: 3 (partial); every record refused: 65; failed:
    69; cancelled: 75. A refused input wins over the state the job ended in."""
    assert job_outcome(_job(JobState.SUCCEEDED)).exit_code is ExitCode.OK
    partial = _job(JobState.SUCCEEDED_WITH_ERRORS, errors=1,
                   validate=StageCounts(total=2, done=1, failed=1))
    assert job_outcome(partial).exit_code is ExitCode.PARTIAL
    refused = _job(JobState.SUCCEEDED, errors=2, validate=StageCounts(total=2, failed=2))
    assert job_outcome(refused).exit_code is ExitCode.DATA_ERROR
    assert job_outcome(_job(JobState.FAILED)).exit_code is ExitCode.UNAVAILABLE
    assert job_outcome(_job(JobState.CANCELLED, errors=1)).exit_code is ExitCode.TEMPORARY


def test_a_delete_that_found_none_of_its_ids_is_not_found() -> None:
    """A delete none of whose ids named a document: 66 (not_found), though its job
    succeeded; some of them known: 3; a delete that failed or was cancelled still
    exits as a failed or cancelled job does, whatever it found."""
    def delete(state: JobState, done: int, failed: int) -> Job:
        job = _job(state, errors=failed, validate=StageCounts(total=done + failed, done=done,
                                                              failed=failed))
        job.kind = JobKind.DELETE
        return job

    assert job_outcome(delete(JobState.SUCCEEDED, 0, 2)) == job_outcome(
        delete(JobState.SUCCEEDED_WITH_ERRORS, 0, 1))
    nothing = job_outcome(delete(JobState.SUCCEEDED, 0, 2))
    assert (nothing.exit_code, nothing.code) == (ExitCode.NOT_FOUND, "not_found")
    assert job_outcome(delete(JobState.SUCCEEDED, 1, 1)).exit_code is ExitCode.PARTIAL
    assert job_outcome(delete(JobState.SUCCEEDED, 2, 0)).exit_code is ExitCode.OK
    assert job_outcome(delete(JobState.FAILED, 0, 2)).exit_code is ExitCode.UNAVAILABLE
    assert job_outcome(delete(JobState.CANCELLED, 0, 2)).exit_code is ExitCode.TEMPORARY


def test_an_error_message_is_one_line() -> None:
    """Line breaks inside a message (a backend's multi-line error) fold into one line."""
    assert one_line("first\n  second\r\n\nthird ") == "first second third"


def _instance(kind: type[HopindexError]) -> HopindexError | None:
    """An error of ``kind`` with a plain message, when its constructor takes one."""
    try:
        return kind("what went wrong")
    except TypeError:  # a kind that needs more (a job id, a status): not answered by code
        return None


def test_one_table_every_door_reads() -> None:
    """Each error type carries its code, HTTP status and exit code: the HTTP answer and
    the CLI's outcome of an error come from its type and name the same code, one code
    never means two statuses or two exit codes, and a server's answer with that code
    exits as the error raised locally does."""
    kinds = [k for k in error_types() if k is not RemoteApiError
             and not issubclass(k, RemoteApiError)]
    assert EnginesOwnedError in kinds  # every module's types, not core/errors.py's alone
    meanings: dict[str, set[tuple[int, ExitCode]]] = {}
    for kind in kinds:
        meanings.setdefault(kind.code, set()).add((kind.http_status, kind.exit_code))
        error = _instance(kind)
        if error is None:
            continue
        outcome = outcome_of(error)
        assert (outcome.code, outcome.exit_code) == (kind.code, kind.exit_code), kind
        answer = from_hopindex_error(error)
        if kind.http_status == SERVER_FAULT:
            assert answer is None, kind  # answered as a generic 500 under the request id
            continue
        assert answer is not None and (answer.status, answer.code) == (
            kind.http_status, kind.code), kind
        remote = outcome_of(RemoteApiError(kind.http_status, kind.code, str(error)))
        assert remote.exit_code is kind.exit_code, kind
    answered = {code: seen for code, seen in meanings.items()
                if any(status != SERVER_FAULT for status, _ in seen)}
    assert all(len(seen) == 1 for seen in answered.values()), answered
