"""Every error answer is JSON ``{"error": {"code", "message", "field"|"line"|...}}``.

hopindex's own errors map to statuses here, by type; nothing else decides what a
client sees, so no handler can leak a traceback or a backend's internals.
"""

from __future__ import annotations

import json
import traceback
from typing import Any

from aiohttp import web

from hopindex.core.errors import (
    SERVER_FAULT,
    HopindexError,
    InvalidInputError,
    LlmAuthenticationError,
)
from hopindex.core.redact import redact_text

JSON_TYPE = "application/json"
RETRY_AFTER_S = 5


class ApiError(Exception):
    """An answer other than success: HTTP status, a stable code, a message for people,
    and where the problem is (``field`` or ``line``) when the request holds it."""

    def __init__(self, status: int, code: str, message: str, *, field: str | None = None,
                 line: int | None = None, details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.line = line
        self.details = details or {}
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        if self.line is not None:
            error["line"] = self.line
        error.update(self.details)
        return {"error": error}


def bad_request(message: str, *, field: str | None = None, code: str = "invalid_input",
                **details: Any) -> ApiError:
    return ApiError(400, code, message, field=field, details=details)


def error_response(error: ApiError, request_id: str | None = None) -> web.Response:
    body = error.body()
    if request_id is not None:
        body["error"]["request_id"] = request_id
    headers = dict(error.headers)
    if error.status == 401:
        headers.setdefault("WWW-Authenticate", 'Bearer realm="hopindex"')
    return web.Response(status=error.status, text=json.dumps(body), content_type=JSON_TYPE,
                        headers=headers)


def from_hopindex_error(exc: HopindexError) -> ApiError | None:
    """The answer for one of hopindex's own errors; None for those that are the
    server's fault (a 500, logged with the request id)."""
    status, code = type(exc).http_status, type(exc).code
    if status == SERVER_FAULT:
        return None
    # The provider's message may echo the key's prefix: say what happened, not more.
    message = ("the LLM provider refused this server's API key"
               if isinstance(exc, LlmAuthenticationError) else redact_text(str(exc)))
    # InvalidInputError's message starts with "where: "; ``field`` repeats it for programs.
    field = (exc.where or None) if isinstance(exc, InvalidInputError) else None
    headers = {}
    if status == 503:
        retry_s = getattr(exc, "retry_after_s", RETRY_AFTER_S)
        headers["Retry-After"] = str(max(1, round(retry_s)))
    return ApiError(status, code, message, field=field, headers=headers)


def plain_traceback(exc: BaseException) -> str:
    """The traceback as text for the log, without the local variables a rich renderer
    would print (a frame's locals can hold a request's credentials)."""
    return "".join(traceback.format_exception(exc))


def internal_error() -> ApiError:
    return ApiError(500, "internal", "internal server error; the server log has the details "
                                     "under this request id")
