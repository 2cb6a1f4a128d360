"""What ``hopindex`` exits with, and which error or job outcome ends a command with which.

The values follow sysexits(3) where one fits, so scripts can tell "fix the input"
from "try again later" from "a bug" without reading messages. Two exceptions keep
what shells and click already mean: 2 for a command line that does not parse, 130
for Ctrl-C. Partial success (3) has no sysexits value; it is the one code that
means some of the work landed.

Every error of hopindex's own hierarchy maps here, by type, and a remote server's
error answer by its code and HTTP status, so a command exits the same whether it
ran locally or through ``--api``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from hopindex.api.remote import RemoteApiError
from hopindex.backends.llm.reachability import is_unreachable
from hopindex.core.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigError,
    HopindexError,
    IndexBusyError,
    InvalidInputError,
    JobCancelledError,
    JobFailedError,
    JobFinishedError,
    LlmAuthenticationError,
    NotFoundError,
    PermanentStageError,
    RetryableStageError,
)
from hopindex.core.models import Job, JobKind, JobState, Stage, StageCounts, is_repairable
from hopindex.core.redact import redact_text


class ExitCode(enum.IntEnum):
    OK = 0
    # A bug, or a failure of no kind below: the message names the exception.
    INTERNAL = 1
    # The command line does not parse (unknown command or option, missing or ill-typed
    # argument), or a destructive command was not confirmed.
    USAGE = 2
    # Some documents or items failed; the rest landed (the job lists each failure).
    PARTIAL = 3
    # EX_DATAERR: the input is wrong: a record, a file, a name or a value given.
    DATA_ERROR = 65
    # EX_NOINPUT: the index, job, document, link or webhook named does not exist.
    NOT_FOUND = 66
    # EX_UNAVAILABLE: a service (Redis, an engine, the API server, the LLM or embedding
    # provider) is unreachable or failing, or a job failed for it.
    UNAVAILABLE = 69
    # EX_TEMPFAIL: the index is busy with running jobs, or the job was cancelled or
    # paused on its LLM budget; the same command (or a resume) can succeed later.
    TEMPORARY = 75
    # EX_NOPERM: the API server refused the key (remote mode).
    NO_PERMISSION = 77
    # EX_CONFIG: a setting is missing or wrong (the message names the variable).
    CONFIG = 78
    # 128 + SIGINT: stopped with Ctrl-C.
    INTERRUPTED = 130


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a command ends: its exit code and the stable error code that ``--json``
    prints (the HTTP API's code for the same error, where it has one)."""

    exit_code: ExitCode
    code: str
    # Why the job failed when its record does not say (its ``reason`` is empty): a job
    # that finished with every item failed, named by the first item's reason.
    reason: str = ""


# Most specific first: the first type that matches decides. The codes are the HTTP
# API's for the same types (api/http/errors.py), so local and remote errors read alike.
_BY_TYPE: tuple[tuple[type[HopindexError], ExitCode, str], ...] = (
    (JobFinishedError, ExitCode.DATA_ERROR, "job_finished"),
    (InvalidInputError, ExitCode.DATA_ERROR, "invalid_input"),
    (NotFoundError, ExitCode.NOT_FOUND, "not_found"),
    (JobCancelledError, ExitCode.TEMPORARY, "job_cancelled"),
    (IndexBusyError, ExitCode.TEMPORARY, "index_busy"),
    (LlmAuthenticationError, ExitCode.CONFIG, "llm_refused"),
    (ConfigError, ExitCode.CONFIG, "not_configured"),
    (BackendUnavailableError, ExitCode.UNAVAILABLE, "unavailable"),
    (RetryableStageError, ExitCode.UNAVAILABLE, "unavailable"),
    (PermanentStageError, ExitCode.UNAVAILABLE, "upstream_failed"),
    (BackendError, ExitCode.UNAVAILABLE, "backend_failed"),
    (JobFailedError, ExitCode.INTERNAL, "job_failed"),
)

# A server's error codes whose meaning its HTTP status does not carry alone.
_REMOTE_CODES = {
    "index_busy": ExitCode.TEMPORARY,
    "job_cancelled": ExitCode.TEMPORARY,
    "not_configured": ExitCode.CONFIG,
    "llm_refused": ExitCode.CONFIG,
}
# 429 (a server busy with its one embedded job, too many streams or failed keys) is
# a "try again later", not a fault of the input.
_REMOTE_STATUSES = {401: ExitCode.NO_PERMISSION, 403: ExitCode.NO_PERMISSION,
                    404: ExitCode.NOT_FOUND, 429: ExitCode.TEMPORARY}
HTTP_CLIENT_ERRORS = range(400, 500)


def outcome_of(exc: HopindexError) -> Outcome:
    """The exit code and error code of one of hopindex's own errors."""
    if isinstance(exc, RemoteApiError):
        return Outcome(_remote_exit_code(exc), exc.code)
    for kind, exit_code, code in _BY_TYPE:
        if isinstance(exc, kind):
            return Outcome(exit_code, code)
    return Outcome(ExitCode.INTERNAL, "internal")


def _remote_exit_code(exc: RemoteApiError) -> ExitCode:
    if exc.code in _REMOTE_CODES:
        return _REMOTE_CODES[exc.code]
    if exc.status in _REMOTE_STATUSES:
        return _REMOTE_STATUSES[exc.status]
    if exc.status in HTTP_CLIENT_ERRORS:
        return ExitCode.DATA_ERROR
    # Unreachable (status 0), overloaded or failing: the server's own bug included,
    # which this process can only report, not fix.
    return ExitCode.UNAVAILABLE


def input_refused(job: Job) -> bool:
    """An ingest none of whose records passed validation: the input is at fault."""
    validate = job.counts.get(Stage.VALIDATE.value, StageCounts())
    return job.kind is JobKind.INGEST and validate.total > 0 and validate.failed == validate.total


def nothing_deleted(job: Job) -> bool:
    """A delete none of whose ids named a document: the job succeeds, listing each id,
    and the command says nothing was found, as for an unknown index or job. A delete
    of some known ids and some unknown ones is partial (3), as any job with failed
    items is."""
    validate = job.counts.get(Stage.VALIDATE.value, StageCounts())
    return job.kind is JobKind.DELETE and validate.total > 0 and validate.done == 0


def job_outcome(job: Job) -> Outcome:
    """How a command that waited for ``job`` ends: the job's own outcome."""
    if input_refused(job):
        return Outcome(ExitCode.DATA_ERROR, "input_refused")
    if job.state is JobState.FAILED:
        return Outcome(ExitCode.UNAVAILABLE, "job_failed")
    if job.state is JobState.CANCELLED:
        return Outcome(ExitCode.TEMPORARY, "job_cancelled")
    # Not finished: the job waits on its LLM budget, and a resume (the same job, later)
    # carries it on.
    if job.state is JobState.PAUSED:
        return Outcome(ExitCode.TEMPORARY, "job_paused")
    if nothing_deleted(job):
        return Outcome(ExitCode.NOT_FOUND, "not_found")
    return _with_errors(job) if job.errors else Outcome(ExitCode.OK, "ok")


def _with_errors(job: Job) -> Outcome:
    """A job that finished with failed items: some landed (3), or none did because the
    LLM provider could not be reached (69: the fix is the provider, not the input)."""
    unreachable = provider_unreachable(job)
    if unreachable is None:
        return Outcome(ExitCode.PARTIAL, "partial")
    return Outcome(ExitCode.UNAVAILABLE, "llm_unreachable", unreachable)


def provider_unreachable(job: Job) -> str | None:
    """Why nothing of ``job`` landed, when that is its LLM provider being unreachable:
    every item a phase failed says so (``backends/llm/reachability.py``) and no phase
    got one through. The job finishes with errors, not failed, and its record keeps
    only the items' messages, hence the reading of them. Records refused at
    validation are no LLM item and do not change the verdict (the job lists them)."""
    failed = [e for e in job.errors if is_repairable(e.stage)]
    if not failed or not all(is_unreachable(e.reason) for e in failed):
        return None
    if any(job.counts.get(phase, StageCounts()).done for phase in job.phases):
        return None
    return redact_text(f"{len(failed)} items failed and none landed; the first: "
                       f"{failed[0].reason}")
