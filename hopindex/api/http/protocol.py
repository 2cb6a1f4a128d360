"""aiohttp's own answers in the JSON error shape: requests it cannot read (an unknown
method, a request line or header over the limit, malformed headers), which it answers
before any middleware runs, as plain text.

:class:`JsonErrorRunner` is ``web.AppRunner`` whose connections answer those as
``{"error": {...}}`` with a request id. The message says what was wrong without
echoing the request: the bytes aiohttp quotes may hold an ``Authorization`` header.
"""

from __future__ import annotations

import uuid

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMethod, LineTooLong
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from hopindex.api.error_view import plain_traceback
from hopindex.api.http.errors import ApiError, error_response, internal_error
from hopindex.api.http.routing import REQUEST_ID_HEADER
from hopindex.core.logging import get_logger

log = get_logger(__name__)

# aiohttp's defaults, named: a request line (method, target, version) and a header line.
MAX_REQUEST_LINE_BYTES = 8190
MAX_HEADER_BYTES = 8190
# Every method some route takes (a 501 for an unknown one lists them).
API_METHODS = "DELETE, GET, POST"
# The forms a request target starts with (RFC 9112 §3.2); a header line never does.
_TARGET_STARTS = (b"/", b"*", b"http:", b"https:")


def unreadable_request_error(status: int, exc: BaseException | None) -> ApiError:
    """The answer for a request aiohttp could not read, or for an error it caught itself."""
    if isinstance(exc, BadHttpMethod | LineTooLong):
        return _unparsed(exc)
    if status == 500:
        return internal_error()
    if status == 504:
        return ApiError(504, "timeout", "the request took too long")
    reason = _reason(exc)
    return ApiError(status, "invalid_request",
                    f"the request could not be read: {reason}" if reason else
                    "the request could not be read")


def _unparsed(exc: BadHttpMethod | LineTooLong) -> ApiError:
    if isinstance(exc, LineTooLong):
        line = exc.args[0] if exc.args and isinstance(exc.args[0], bytes | bytearray) else b""
        if bytes(line).startswith(_TARGET_STARTS):
            return ApiError(414, "uri_too_long", "the request line is over the limit of "
                                                 f"{MAX_REQUEST_LINE_BYTES:,} bytes")
        return ApiError(431, "header_too_large", "a request header is over the limit of "
                                                 f"{MAX_HEADER_BYTES:,} bytes")
    if "HTTPS" in str(exc):
        return ApiError(400, "invalid_request", "this port speaks plain HTTP, not HTTPS")
    # RFC 9110 15.6.2: a method the server does not recognise for any resource is a 501
    # (a 405 is for a known method the resource does not take).
    return ApiError(501, "method_not_implemented", "the request method is not one this API "
                    f"uses: {API_METHODS}", headers={"Allow": API_METHODS})


def _reason(exc: BaseException | None) -> str:
    # llhttp's messages are "<reason>:\n\n  <the bytes>\n  <pointer>": keep the reason.
    message = getattr(exc, "message", "") or ""
    first = str(message).split("\n", 1)[0].strip().rstrip(":")
    return first if first.isprintable() and len(first) <= 200 else ""


class _JsonErrorProtocol(RequestHandler):
    __slots__ = ()

    def handle_error(self, request: BaseRequest, status: int = 500,
                     exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        if request.writer.output_size > 0:
            # Part of an answer is out: no other can follow (what aiohttp does too).
            raise ConnectionError("response already started; cannot send the error")
        error = unreadable_request_error(status, exc)
        request_id = uuid.uuid4().hex
        if error.status == 500:
            # A handler's own error (the request was read): its traceback, as the
            # answering middleware logs one.
            log.error("http_request_failed", request_id=request_id, status=error.status,
                      error_type=type(exc).__name__ if exc else None,
                      traceback=plain_traceback(exc) if exc else None)
        else:
            # The type only: aiohttp's message quotes the request's bytes.
            log.info("http_request_unreadable", request_id=request_id, status=error.status,
                     error_type=type(exc).__name__ if exc else None)
        response = error_response(error, request_id)
        response.headers[REQUEST_ID_HEADER] = request_id
        response.force_close()  # the rest of the stream cannot be trusted to frame
        return response


class _JsonErrorServer(web.Server):
    def __call__(self) -> RequestHandler:
        return _JsonErrorProtocol(self, loop=self._loop, **self._kwargs)


class JsonErrorRunner(web.AppRunner):
    """``web.AppRunner`` whose connections answer unreadable requests in JSON."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        # The app built a plain Server (its connections made by Server.__call__); the
        # same object, connection factory replaced, keeps everything the app set up.
        server.__class__ = _JsonErrorServer
        return server

