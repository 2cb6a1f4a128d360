"""One error root. What an error means to each door is part of its type: its stable
``code`` (the HTTP API's error code and the CLI's ``--json`` code), the HTTP status it is
answered with, the CLI's exit code, and whether it is worth retrying. The HTTP error
mapping, the exit codes and the reading of a remote server's answers all read these;
a subclass inherits its parent's unless it says otherwise."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any


class ExitCode(enum.IntEnum):
    """What ``hopindex`` exits with: sysexits(3) where one fits (api/exit_codes.py)."""

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
    # EX_NOINPUT: the index, job, document, link or webhook named does not exist, or
    # the events after the event id named were trimmed from the log.
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


# The HTTP status of an error that is the server's own fault: answered as a generic
# 500 ``internal`` under the request id, its message kept for the log.
SERVER_FAULT = 500


class HopindexError(Exception):
    """Root of every error hopindex raises on purpose."""

    retryable: bool = False
    code: str = "internal"
    http_status: int = SERVER_FAULT
    exit_code: ExitCode = ExitCode.INTERNAL
    # Attributes a program acts on that an error answer carries beside its code and
    # message (``{"error": {..., "oldest_id": ...}}``), set again by ``from_answer``.
    answer_fields: tuple[str, ...] = ()

    @classmethod
    def from_answer(cls, message: str, *, where: str | None = None,
                    details: Mapping[str, Any] | None = None) -> HopindexError:
        """The error a server answered with, rebuilt on the client's side: the same
        type, so a caller catches the same class through either transport, and the
        same message. Subclasses with required constructor arguments of their own are
        rebuilt without running their constructor, their extra attributes defaulted
        (``answer_fields`` taken from the answer's ``details``)."""
        error = cls.__new__(cls)
        if issubclass(cls, InvalidInputError):
            # Messages read "where: what" wherever they were raised: a refusal the server
            # made while parsing the request carries ``where`` apart only.
            if where and not message.startswith(f"{where}: "):
                message = f"{where}: {message}"
            error.where = where or ""  # type: ignore[attr-defined]  # set on this subclass
        elif issubclass(cls, NotFoundError | EventsGoneError):
            error.where = where or ""  # type: ignore[attr-defined]  # set on this subclass
        for name in cls.answer_fields:
            setattr(error, name, (details or {}).get(name))
        Exception.__init__(error, message)
        if issubclass(cls, RetryableStageError):
            error.retry_after_s = 1.0  # type: ignore[attr-defined]  # set on this subclass
        return error


class ConfigError(HopindexError):
    """A setting is missing or malformed; names the environment variable."""

    # A request asking for something this deployment is not set up for (an LLM method
    # without a model): the request can change, so a 4xx.
    code, http_status, exit_code = "not_configured", 422, ExitCode.CONFIG


class InvalidInputError(HopindexError):
    """A user input (file, line, field, name) is malformed.

    ``where`` names the file, line or field so the message can be acted on.
    """

    code, http_status, exit_code = "invalid_input", 400, ExitCode.DATA_ERROR

    def __init__(self, message: str, *, where: str = "") -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class JobFinishedError(InvalidInputError):
    """The job has already ended (succeeded, partial, failed or cancelled), so it can
    no longer be cancelled: a conflict with its state, not a malformed request."""

    # A job that ended before the request reached it: the request was well formed.
    code, http_status = "job_finished", 409


class InvalidIndexNameError(InvalidInputError):
    """An index name outside the one safe pattern (it becomes paths and collection names)."""


class NotFoundError(HopindexError):
    """An index, job, document or unit that does not exist.

    ``where`` names the argument that named it when the caller gave several (a
    document's id beside its index: ``doc_id``); the message names the missing thing
    itself, so ``where`` is not repeated in it.
    """

    code, http_status, exit_code = "not_found", 404, ExitCode.NOT_FOUND

    def __init__(self, message: str, *, where: str = "") -> None:
        self.where = where
        super().__init__(message)


class EventsGoneError(HopindexError):
    """Events after the id a reader resumes from were trimmed from the event log, which
    keeps the newest ``HOPINDEX_EVENT_RETENTION``: reading on would skip them without a
    word. ``oldest_id`` is the oldest event still kept (None when none is), ``where``
    the argument that named the id (``from``)."""

    # 410: the events existed and are gone for good; no retry brings them back.
    code, http_status, exit_code = "events_gone", 410, ExitCode.NOT_FOUND
    answer_fields = ("after_id", "oldest_id", "retention")

    def __init__(self, after_id: str, oldest_id: str | None, retention: int, *,
                 where: str = "from") -> None:
        self.where = where
        self.after_id, self.oldest_id, self.retention = after_id, oldest_id, retention
        kept = f"the oldest kept is {oldest_id}" if oldest_id is not None else "none is kept"
        super().__init__(f"{where}: the events after {after_id} were trimmed from the event "
                         f"log, which keeps the newest {retention:,} "
                         f"(HOPINDEX_EVENT_RETENTION); {kept}. Read from the start (no id) "
                         "for the events still kept")


class AccessDeniedError(HopindexError):
    """The caller's API key does not allow this: it is read-only, or does not cover
    the index (the HTTP API's 403s; the MCP server's tool errors for the same key)."""

    code, http_status, exit_code = "forbidden", 403, ExitCode.NO_PERMISSION
    where: str = ""  # "index" when the key does not cover the index named

    def __init__(self, message: str, *, where: str = "") -> None:
        self.where = where
        super().__init__(message)


class BackendError(HopindexError):
    """A storage or model backend failed."""

    # Answered as the server's fault over HTTP; the CLI names the failing service.
    code, exit_code = "backend_failed", ExitCode.UNAVAILABLE


class BackendUnavailableError(BackendError):
    """A backend could not be reached; trying again later may work."""

    code, http_status = "unavailable", 503

    retryable = True


class StageError(HopindexError):
    """A pipeline stage failed for one document or entity."""


class RetryableStageError(StageError):
    """A transient failure: the task is retried after ``retry_after_s``."""

    code, http_status, exit_code = "unavailable", 503, ExitCode.UNAVAILABLE

    retryable = True

    def __init__(self, message: str, *, retry_after_s: float = 1.0) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(message)


class PermanentStageError(StageError):
    """A failure that retrying cannot fix: recorded on the job, the rest goes on."""

    code, http_status, exit_code = "upstream_failed", 502, ExitCode.UNAVAILABLE


class JobCancelledError(HopindexError):
    """The job was cancelled; remaining work is not scheduled."""

    code, http_status, exit_code = "job_cancelled", 409, ExitCode.TEMPORARY


class QueryCancelledError(HopindexError):
    """The caller of a streamed query went away (closed the connection, stopped reading):
    the query and its LLM call stop, and nobody is left to answer. 499 is the status
    proxies log for a client that closed its request."""

    code, http_status, exit_code = "cancelled", 499, ExitCode.INTERRUPTED


class RerankError(BackendError):
    """The reranker (a ``/rerank`` service or a local cross-encoder) gave no scores: the
    service failed past its retries, refused the request, or answered in a shape that
    cannot be read. A query degrades to its fused order instead of failing."""

    code, http_status = "rerank_failed", 502


class JobFailedError(HopindexError):
    """Planning or launching a job raised an error of another kind (a bug, a driver's
    error); the job, when it was created, is failed with the same reason."""

    code = "job_failed"


class IndexExistsError(HopindexError):
    """An index of that name is there already: creating it again is refused (ingest
    into it, or delete it first)."""

    code, http_status, exit_code = "index_exists", 409, ExitCode.DATA_ERROR


class JobSlotBusyError(HopindexError):
    """Without workers a process runs one ingest or delete job at a time, and one is
    running: the submission can be sent again once it ends."""

    code, http_status, exit_code = "busy", 429, ExitCode.TEMPORARY
    retryable = True

    def __init__(self, message: str, *, retry_after_s: float = 5.0) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(message)


class IndexBusyError(HopindexError):
    """The index has unfinished jobs: it cannot be deleted now, and a job that may not
    wait for its turn (``--no-wait``, a server without workers) is refused; retry once
    they end."""

    code, http_status, exit_code = "index_busy", 409, ExitCode.TEMPORARY


class LlmAuthenticationError(ConfigError):
    """The LLM provider refused the API key: retrying cannot help, fix the setting."""

    code, http_status = "llm_refused", 502


class LlmBatchUnavailableError(ConfigError):
    """The LLM provider does not offer the Batch API (its ``/v1/files`` or
    ``/v1/batches`` is not there): batch mode cannot be used at that base URL."""


class LlmBatchFailedError(PermanentStageError):
    """The provider failed a batch at validation (its ``errors`` name the input lines):
    sending the same lines again cannot help."""


class LlmOutputError(PermanentStageError):
    """The model's reply did not have the expected shape, even after one repair attempt."""


class ReplyShapeError(LlmOutputError, ValueError):
    """One reply is not of the shape its call kind declares (no JSON, a wrong type,
    nothing usable left after dropping the items that do not fit).

    A ``ValueError`` too: the client treats it as a parse failure (one repair call,
    a cached reply read as a miss); raised past the repair it is the item's
    ``LlmOutputError``. The message names the call kind and what was wrong.
    """


class LlmUnavailableError(RetryableStageError):
    """The LLM provider kept failing (429, 5xx, timeouts) past the retry budget."""


class JobPausedError(HopindexError):
    """The job is paused: the task ends without doing its work, which a resume sends
    again (scheduler/pause.py). Neither retried nor a failure."""

    def __init__(self, message: str, *, job_id: str) -> None:
        self.job_id = job_id
        super().__init__(message)


class BudgetExhaustedError(JobPausedError):
    """The job's LLM budget cannot cover the next call: the job pauses instead.

    Not retried and not a failure: the item stays outstanding on the job, and a
    resume (with a budget raised, or as it was) drives it again. ``figures`` holds
    the limits, what was spent and held, and what the refused call needed.
    """

    def __init__(self, message: str, *, job_id: str, figures: dict[str, object]) -> None:
        self.figures = figures
        super().__init__(message, job_id=job_id)


# An LLM call that failed for its own request, not for the configuration or the
# infrastructure around it: a reply unusable even after the repair (LlmOutputError),
# a request the provider refuses for good (PermanentStageError), the provider failing
# or unreachable past the client's policy (LlmUnavailableError). An index item records
# it and the job goes on (backends/llm/runner.py); a query degrades that step
# (methods/llm_steps.py). A refused key is a ConfigError, never among these.
LLM_CALL_FAILURES: tuple[type[HopindexError], ...] = (PermanentStageError, LlmUnavailableError)


def error_types() -> list[type[HopindexError]]:
    """Every error type of the hierarchy defined so far, the root first."""
    found: list[type[HopindexError]] = []
    pending: list[type[HopindexError]] = [HopindexError]
    while pending:
        kind = pending.pop(0)
        if kind not in found:
            found.append(kind)
            pending.extend(kind.__subclasses__())
    return found


def error_type_for(code: str) -> type[HopindexError] | None:
    """The error type a server's answer code stands for: the first in the hierarchy
    with that code that is not answered as the server's own fault (several share a
    code; the first is the most general, which a caller catching any of them gets)."""
    for kind in error_types():
        if kind.code == code and kind.http_status != SERVER_FAULT:
            return kind
    return None
