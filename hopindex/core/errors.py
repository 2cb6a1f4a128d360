"""One error root; whether an error is worth retrying is part of its type."""

from __future__ import annotations


class HopindexError(Exception):
    """Root of every error hopindex raises on purpose."""

    retryable: bool = False


class ConfigError(HopindexError):
    """A setting is missing or malformed; names the environment variable."""


class InvalidInputError(HopindexError):
    """A user input (file, line, field, name) is malformed.

    ``where`` names the file, line or field so the message can be acted on.
    """

    def __init__(self, message: str, *, where: str = "") -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class JobFinishedError(InvalidInputError):
    """The job has already ended (succeeded, partial, failed or cancelled), so it can
    no longer be cancelled: a conflict with its state, not a malformed request."""


class InvalidIndexNameError(InvalidInputError):
    """An index name outside the one safe pattern (it becomes paths and collection names)."""


class NotFoundError(HopindexError):
    """An index, job, document or unit that does not exist."""


class BackendError(HopindexError):
    """A storage or model backend failed."""


class BackendUnavailableError(BackendError):
    """A backend could not be reached; trying again later may work."""

    retryable = True


class StageError(HopindexError):
    """A pipeline stage failed for one document or entity."""


class RetryableStageError(StageError):
    """A transient failure: the task is retried after ``retry_after_s``."""

    retryable = True

    def __init__(self, message: str, *, retry_after_s: float = 1.0) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(message)


class PermanentStageError(StageError):
    """A failure that retrying cannot fix: recorded on the job, the rest goes on."""


class JobCancelledError(HopindexError):
    """The job was cancelled; remaining work is not scheduled."""


class JobFailedError(HopindexError):
    """Planning or launching a job raised an error of another kind (a bug, a driver's
    error); the job, when it was created, is failed with the same reason."""


class IndexBusyError(HopindexError):
    """The index has unfinished jobs: it cannot be deleted now, and a job that may not
    wait for its turn (``--no-wait``, a server without workers) is refused; retry once
    they end."""


class LlmAuthenticationError(ConfigError):
    """The LLM provider refused the API key: retrying cannot help, fix the setting."""


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
