"""What ``hopindex`` exits with, and which error or job outcome ends a command with which.

The values follow sysexits(3) where one fits, so scripts can tell "fix the input"
from "try again later" from "a bug" without reading messages. Two exceptions keep
what shells and click already mean: 2 for a command line that does not parse, 130
for Ctrl-C. Partial success (3) has no sysexits value; it is the one code that
means some of the work landed.

Every error of hopindex's own hierarchy carries its exit code (core/errors.py), and a
remote server's error answer maps by its code and HTTP status to the same one, so a
command exits the same whether it ran locally or through ``--api``. ``ExitCode``
lives beside the errors and is named here too.
"""

from __future__ import annotations

from dataclasses import dataclass

from hopindex.api.client.http_wire import RemoteApiError
from hopindex.backends.llm.reachability import is_unreachable
from hopindex.core.errors import SERVER_FAULT, ExitCode, HopindexError, error_types
from hopindex.core.models import Job, JobKind, JobState, Stage, StageCounts, is_repairable
from hopindex.core.redact import redact_text

# ExitCode is named here too: the commands and their tests read exit codes from here.
__all__ = ["HTTP_CLIENT_ERRORS", "ExitCode", "Outcome", "input_refused", "job_outcome",
           "nothing_deleted", "outcome_of", "provider_unreachable"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a command ends: its exit code and the stable error code that ``--json``
    prints (the HTTP API's code for the same error, where it has one)."""

    exit_code: ExitCode
    code: str
    # Why the job failed when its record does not say (its ``reason`` is empty): a job
    # that finished with every item failed, named by the first item's reason.
    reason: str = ""


# 429 (a server busy with its one embedded job, too many streams or failed keys) is
# a "try again later", not a fault of the input.
_REMOTE_STATUSES = {401: ExitCode.NO_PERMISSION, 403: ExitCode.NO_PERMISSION,
                    404: ExitCode.NOT_FOUND, 429: ExitCode.TEMPORARY}
HTTP_CLIENT_ERRORS = range(400, 500)


def outcome_of(exc: HopindexError) -> Outcome:
    """The exit code and error code of one of hopindex's own errors."""
    if isinstance(exc, RemoteApiError):
        return Outcome(_remote_exit_code(exc), exc.code)
    return Outcome(type(exc).exit_code, type(exc).code)


def _remote_exit_code(exc: RemoteApiError) -> ExitCode:
    # The server's code names the error type it answered for (each type carries its
    # code, HTTP status and exit code); codes it answers only as its own fault (a 500)
    # and codes of no type (a busy slot, a refused key) go by the status.
    by_code = {kind.code: kind.exit_code for kind in error_types()
               if kind.http_status != SERVER_FAULT}
    if exc.code in by_code:
        return by_code[exc.code]
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


# How a job in one of these states ends the command that waited for it.
_BY_STATE = {
    JobState.FAILED: Outcome(ExitCode.UNAVAILABLE, "job_failed"),
    JobState.CANCELLED: Outcome(ExitCode.TEMPORARY, "job_cancelled"),
    # Not finished: the job waits on its LLM budget, and a resume (the same job, later)
    # carries it on.
    JobState.PAUSED: Outcome(ExitCode.TEMPORARY, "job_paused"),
    # Not finished either: its LLM requests are with the provider's Batch API, and the
    # job goes on by itself once their results are in (within the completion window).
    JobState.WAITING_ON_PROVIDER: Outcome(ExitCode.TEMPORARY, "job_waiting_on_provider"),
}


def job_outcome(job: Job) -> Outcome:
    """How a command that waited for ``job`` ends: the job's own outcome."""
    if input_refused(job):
        return Outcome(ExitCode.DATA_ERROR, "input_refused")
    if job.state in _BY_STATE:
        return _BY_STATE[job.state]
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
