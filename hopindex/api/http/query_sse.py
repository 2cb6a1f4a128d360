"""A streamed query over HTTP: the client's ``QueryStream`` as server-sent events.

The response starts with the query's first event, so a query refused before it has
any (an unknown index, a bad option, the request timeout) is answered as an
unstreamed one is, with a JSON error and its status. From then on each event goes out
as it comes (``event: passages``, ``answer.delta``, ``usage``, then ``done`` or
``degraded``), comment lines keep idle proxies from closing the connection while the
model thinks, and a failure is an ``error`` event that ends the stream. No ``id:`` and
no ``retry:``: a query is not resumed, a reconnect would ask it again.

A reader that goes away (the connection closes, the server stops) closes the stream,
which cancels the query's answer call at the provider.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable

from aiohttp import web

from hopindex.api.client.query_stream import QueryEvent, QueryStream
from hopindex.api.error_view import plain_traceback
from hopindex.api.http.errors import ApiError, from_hopindex_error, internal_error
from hopindex.api.http.routing import REQUEST_ID_HEADER, REQUEST_ID_KEY, ApiContext
from hopindex.api.http.sse import EVENT_STREAM_TYPE, POLL_S, comment
from hopindex.core.errors import HopindexError
from hopindex.core.logging import get_logger

log = get_logger(__name__)

_END = object()
Item = QueryEvent | BaseException | object


def frame(event: QueryEvent) -> bytes:
    data = json.dumps(event.as_dict(), separators=(",", ":"))
    return f"event: {event.type.value}\ndata: {data}\n\n".encode()


def error_frame(exc: BaseException) -> bytes:
    """The ``error`` event: the error as a JSON error body says it (code, message,
    field), with the status an unstreamed answer would have had; the server's own
    fault is logged and sent as ``internal``."""
    answer = exc if isinstance(exc, ApiError) else (
        from_hopindex_error(exc) if isinstance(exc, HopindexError) else None)
    if answer is None:
        log.error("query_stream_failed", error_type=type(exc).__name__,
                  traceback=plain_traceback(exc))
        answer = internal_error()
    body = answer.body()
    body["error"]["status"] = answer.status
    return f"event: error\ndata: {json.dumps(body)}\n\n".encode()


def forward(events: QueryStream, put: Callable[[Item], None]) -> None:
    """Read ``events`` (blocking) on a thread of its own and hand each on to the loop."""
    try:
        for event in events:
            put(event)
    except BaseException as exc:  # handed to the handler, which answers it
        put(exc)
    put(_END)


class QueryEventWriter:
    """One streamed query's response."""

    def __init__(self, ctx: ApiContext, request: web.Request, events: QueryStream,
                 translate: Callable[[BaseException], BaseException]) -> None:
        self._ctx = ctx
        self._request = request
        self._events = events
        self._translate = translate
        self._queue: asyncio.Queue[Item] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def put(item: Item) -> None:
            # A server that stopped meanwhile has closed its loop: nobody reads on.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._queue.put_nowait, item)

        self._reader = threading.Thread(target=forward, args=(events, put), daemon=True,
                                        name="hopindex-query-sse")
        self._reader.start()

    async def first(self, timeout_s: float) -> Item:
        """The first event, or the query's error raised (answered as JSON): nothing is
        sent before it."""
        try:
            async with asyncio.timeout(timeout_s):
                item = await self._queue.get()
        except BaseException:
            self._events.close()
            raise
        if isinstance(item, BaseException):
            raise self._translate(item)
        return item

    async def serve(self, first: Item) -> web.StreamResponse:
        ctx = self._ctx
        response = web.StreamResponse(headers={
            "Content-Type": EVENT_STREAM_TYPE, "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no", REQUEST_ID_HEADER: self._request[REQUEST_ID_KEY]})
        ctx.streams.open += 1
        try:
            await response.prepare(self._request)
            await self._write_all(response, first)
            await response.write_eof()
        except ConnectionResetError:
            log.info("query_stream_client_gone")
        finally:
            ctx.streams.open -= 1
            self._events.close()  # no-op after the end; else the answer call stops
        return response

    async def _write_all(self, response: web.StreamResponse, item: Item) -> None:
        keepalive_s = self._ctx.settings.api_sse_keepalive_s
        while item is not _END:
            if isinstance(item, QueryEvent):
                await response.write(frame(item))
            elif isinstance(item, BaseException):
                with contextlib.suppress(ConnectionResetError):
                    await response.write(error_frame(self._translate(item)))
                return
            written_at = time.monotonic()
            while True:
                if self._client_gone() or self._ctx.closing.is_set():
                    log.info("query_stream_stopped", client_gone=self._client_gone())
                    return
                try:
                    item = await asyncio.wait_for(self._queue.get(), POLL_S)
                    break
                except TimeoutError:
                    if time.monotonic() - written_at >= keepalive_s:
                        await response.write(comment("keep-alive"))
                        written_at = time.monotonic()

    def _client_gone(self) -> bool:
        transport = self._request.transport
        return transport is None or transport.is_closing()


async def serve_query_stream(ctx: ApiContext, request: web.Request,
                             open_events: Callable[[], QueryStream],
                             translate: Callable[[BaseException], BaseException]
                             ) -> web.StreamResponse:
    """``open_events()``'s events as server-sent events; ``translate`` rewords a refusal
    as the API names its fields."""
    if ctx.streams.open >= ctx.streams.limit:
        raise ApiError(429, "too_many_streams", f"{ctx.streams.limit} event streams are open "
                       "(HOPINDEX_API_MAX_EVENT_STREAMS); retry later",
                       headers={"Retry-After": "5"})
    writer = QueryEventWriter(ctx, request, open_events(), translate)
    first = await writer.first(ctx.settings.api_request_timeout_s)
    return await writer.serve(first)
