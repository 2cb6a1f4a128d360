"""One ASGI application call served from an aiohttp handler: the MCP SDK's
streamable-HTTP transport, at ``/mcp`` behind our own route table and middlewares.

Not aiohttp-asgi, because (a) once the body is read its ``receive()`` returns an empty
``http.request`` at once, forever, never ``http.disconnect`` and without suspending, so
sse-starlette's disconnect listener holds the event loop for the life of the stream
(measured: 10,000,000 calls in 5.5 s while a 10 ms ticker ran once; uncapped, a 1 s
pause between two chunks never ended); (b) it is a router resource, so requests bypass
our routes and auth middleware; (c) its scope cannot carry the authenticated principal
(here ``state`` becomes ``scope["state"]``, Starlette's ``request.state``); (d) it
overwrites repeated response headers.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from aiohttp import web

from hopindex.api.error_view import plain_traceback
from hopindex.api.http.errors import error_response, internal_error
from hopindex.api.http.routing import REQUEST_ID_HEADER, REQUEST_ID_KEY
from hopindex.core.logging import get_logger

# Starlette's aliases, spelled out: the http layer does not depend on starlette.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = get_logger(__name__)

# aiohttp does not cancel a handler when its client leaves; a waiting receive() looks
# at the connection this often (a write that fails tells it at once).
CLIENT_CHECK_S = 0.5


def _address(info: object) -> tuple[str, int] | None:
    # (host, port) for TCP, also from IPv6's 4-tuple; a Unix socket has none.
    return (str(info[0]), int(info[1])) if isinstance(info, tuple) and len(info) >= 2 else None


def _scope(request: web.Request, state: Mapping[str, Any] | None) -> Scope:
    url = request.rel_url  # as sent, percent-encoded; origin-form even for absolute-form
    transport = request.transport
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method, "scheme": request.scheme, "path": request.path,
        "raw_path": url.raw_path.encode(), "query_string": url.raw_query_string.encode(),
        "root_path": "", "state": dict(state or {}),
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": _address(transport.get_extra_info("peername")) if transport else None,
        "server": _address(transport.get_extra_info("sockname")) if transport else None,
    }


class _Exchange:
    """The request body in and the response out, for one call of the app."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.response: web.StreamResponse | None = None
        self.body_done = self.complete = self.gone = self.empty = False
        self.over = asyncio.Event()  # the response is complete, the client gone or the app done

    def client_gone(self) -> None:
        self.gone = True
        self.over.set()

    async def receive(self) -> Message:
        if not self.body_done and not self.over.is_set():
            try:
                chunk = await self.request.content.readany()  # what has arrived, no more
            except OSError:  # aiohttp's "Connection lost" on the request payload
                self.client_gone()
                return {"type": "http.disconnect"}
            self.body_done = self.request.content.at_eof()
            return {"type": "http.request", "body": chunk, "more_body": not self.body_done}
        while not self.over.is_set():
            transport = self.request.transport
            if transport is None or transport.is_closing():
                self.client_gone()
                break
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CLIENT_CHECK_S):
                    await self.over.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if self.complete or kind not in ("http.response.start", "http.response.body"):
            raise RuntimeError(f"unexpected ASGI message {kind!r}"
                               + (" after the response completed" if self.complete else ""))
        if self.gone:
            raise OSError("the client has gone")  # ASGI 2.4: send() on a closed connection
        if kind == "http.response.start":
            if self.response is not None:
                raise RuntimeError("http.response.start sent twice")
            status = int(message["status"])
            self.response = web.StreamResponse(status=status)
            for name, value in message.get("headers", ()):
                # add, not set: repeated headers (Set-Cookie) all go out. aiohttp writes
                # headers as UTF-8 and, without a Content-Length, chunks on HTTP/1.1.
                self.response.headers.add(name.decode(), value.decode())
            # aiohttp's StreamResponse would write these bodies; HTTP allows none.
            self.empty = self.request.method == "HEAD" or status < 200 or status in (204, 304)
            await self._to_client(self.response.prepare(self.request))
            return
        if self.response is None or not self.response.prepared:
            raise RuntimeError("http.response.body before http.response.start")
        if message.get("body") and not self.empty:
            await self._to_client(self.response.write(message["body"]))
        if not message.get("more_body", False):
            await self._to_client(self.response.write_eof())
            self.complete = True
            self.over.set()

    async def _to_client(self, write: Awaitable[Any]) -> None:
        try:
            await write
        except OSError:  # aiohttp's ClientConnectionResetError is one
            self.client_gone()
            raise


async def serve_asgi(app: AsgiApp, request: web.Request, *,
                     state: Mapping[str, Any] | None = None) -> web.StreamResponse:
    """Run ``app`` for ``request``; ``state`` (a copy) becomes ``scope["state"]``."""
    exchange = _Exchange(request)
    failure: Exception | None = None
    try:
        await app(_scope(request, state), exchange.receive, exchange.send)
    except Exception as exc:
        failure = exc
    finally:
        exchange.over.set()  # a receive() still waiting, in a task the app left, ends
    response = exchange.response
    started = response is not None and response.prepared
    error_type = type(failure).__name__ if failure else None
    if exchange.gone and not exchange.complete:
        log.info("asgi_client_gone", started=started, error_type=error_type)
    elif failure is not None or not exchange.complete:
        log.error("asgi_app_failed", started=started, error_type=error_type,
                  traceback=plain_traceback(failure) if failure else None)
    if response is None or not started:
        request_id = request.get(REQUEST_ID_KEY)
        answer = error_response(internal_error(), request_id)
        if request_id is not None:
            answer.headers[REQUEST_ID_HEADER] = request_id
        return answer
    if not exchange.complete and request.transport is not None:
        # Closed, not ended: without the last chunk (or short of its Content-Length) the
        # client can tell the body was cut. aiohttp's own write_eof then lets it be.
        request.transport.close()
    return response
