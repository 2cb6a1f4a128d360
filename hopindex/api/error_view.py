"""What a caller of a door is told about one of hopindex's own errors: its stable code,
a message fit to show (secrets redacted, never a backend's internals), the field or
place it names, and whether trying again may help. The HTTP API answers with it
(api/http/errors.py) and the MCP server's tool errors carry it (api/mcp/), so an
agent and a program read the same refusal."""

from __future__ import annotations

import dataclasses
import traceback
from typing import Any

from hopindex.core.errors import (
    SERVER_FAULT,
    AccessDeniedError,
    EventsGoneError,
    HopindexError,
    InvalidInputError,
    LlmAuthenticationError,
    NotFoundError,
)
from hopindex.core.redact import redact_text

# What a client is told to wait before retrying a 503 that gave no figure of its own.
RETRY_AFTER_S = 5


@dataclasses.dataclass(frozen=True, slots=True)
class ErrorView:
    code: str
    message: str
    http_status: int
    field: str | None = None
    retryable: bool = False
    retry_after_s: float | None = None
    # The error's ``answer_fields`` (core/errors.py), e.g. the oldest event id kept.
    details: dict[str, Any] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        error.update(self.details)
        return error


def view_error(exc: HopindexError) -> ErrorView | None:
    """The view of ``exc``; None for an error that is the server's fault (a bug, a
    failing backend), which a door answers as a generic internal error and logs."""
    status, code = type(exc).http_status, type(exc).code
    if status == SERVER_FAULT:
        return None
    # The provider's message may echo the key's prefix: say what happened, not more.
    message = ("the LLM provider refused this server's API key"
               if isinstance(exc, LlmAuthenticationError) else redact_text(str(exc)))
    # The argument the error names: InvalidInputError's message starts with "where: ",
    # and ``field`` repeats it for programs.
    named = InvalidInputError | AccessDeniedError | NotFoundError | EventsGoneError
    field = (exc.where or None) if isinstance(exc, named) else None
    retry_after_s = None
    if status in (429, 503):
        retry_after_s = float(getattr(exc, "retry_after_s", RETRY_AFTER_S))
    details = {name: getattr(exc, name, None) for name in type(exc).answer_fields}
    return ErrorView(code=code, message=message, http_status=status, field=field,
                     retryable=exc.retryable, retry_after_s=retry_after_s, details=details)


def plain_traceback(exc: BaseException) -> str:
    """The traceback as text for the log, without the local variables a rich renderer
    would print (a frame's locals can hold a request's credentials)."""
    return "".join(traceback.format_exception(exc))
