"""Every error answer is JSON ``{"error": {"code", "message", "field"|"line"|...}}``.

hopindex's own errors map to statuses here, by type; nothing else decides what a
client sees, so no handler can leak a traceback or a backend's internals.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from hopindex.api.error_view import view_error
from hopindex.core.errors import HopindexError

JSON_TYPE = "application/json"


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
    view = view_error(exc)
    if view is None:
        return None
    headers = {}
    if view.retry_after_s is not None:
        headers["Retry-After"] = str(max(1, round(view.retry_after_s)))
    return ApiError(view.http_status, view.code, view.message, field=view.field,
                    details=view.details, headers=headers)


def internal_error() -> ApiError:
    return ApiError(500, "internal", "internal server error; the server log has the details "
                                     "under this request id")
