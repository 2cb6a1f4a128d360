"""Server-sent events from the durable event log (docs/architecture.md).

Each event goes out as ``id:``/``event:``/``data:`` lines, so a client that
reconnects with ``Last-Event-ID`` (browsers' EventSource does it by itself)
resumes strictly after the last event it saw. Comment lines keep idle proxies
from closing the connection; the stream ends when the client leaves, when the
server stops, or (``mode=backlog``) once the log is read to its end.

A stream that falls behind the log's retention (events after its place were trimmed
before it read them) sends one ``gap`` event, the ``events_gone`` error body with the
oldest id kept and status 410, and ends: resuming would skip the trimmed events
without a word, and a client that reconnects from its last id is answered 410.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import time

from aiohttp import web

from hopindex.api.client.http_wire import GAP_EVENT
from hopindex.api.http.errors import ApiError, from_hopindex_error
from hopindex.api.http.routing import REQUEST_ID_HEADER, REQUEST_ID_KEY, ApiContext
from hopindex.core.errors import EventsGoneError, HopindexError
from hopindex.core.events import Event
from hopindex.core.logging import get_logger

log = get_logger(__name__)

PAGE = 100
POLL_S = 0.25
RETRY_MS = 2000
EVENT_STREAM_TYPE = "text/event-stream"


class StreamMode(enum.StrEnum):
    FOLLOW = "follow"  # the backlog, then each new event as it is appended
    BACKLOG = "backlog"  # the backlog only, then the stream ends


def frame(event: Event) -> bytes:
    data = json.dumps(event.as_dict(), separators=(",", ":"))
    return f"id: {event.event_id}\nevent: {event.event_type.value}\ndata: {data}\n\n".encode()


def gap_frame(exc: EventsGoneError) -> bytes:
    """The ``gap`` event: the error body a 410 answer carries, with its status."""
    answer = from_hopindex_error(exc)
    assert answer is not None  # a 410, never the server's fault
    body = answer.body()
    body["error"]["status"] = answer.status
    return f"event: {GAP_EVENT}\ndata: {json.dumps(body)}\n\n".encode()


def comment(text: str) -> bytes:
    return f": {text}\n\n".encode()


class EventStream:
    """One client's stream: reads pages after its cursor and writes them as frames."""

    def __init__(self, ctx: ApiContext, request: web.Request, *, index: str | None,
                 cursor: str | None, mode: StreamMode) -> None:
        self._ctx = ctx
        self._request = request
        self.cursor = cursor
        self._mode = mode
        self._written_at = time.monotonic()
        self._follower = ctx.client.events.follower(index, cursor)

    async def read_page(self) -> list[Event]:
        """The next page after what was read (the rest is read once it is written)."""
        return await self._ctx.blocking.run(self._follower.read)

    async def _write(self, response: web.StreamResponse, data: bytes) -> None:
        await response.write(data)
        self._written_at = time.monotonic()

    def _client_gone(self) -> bool:
        transport = self._request.transport
        return transport is None or transport.is_closing()

    async def run(self, response: web.StreamResponse, first: list[Event]) -> None:
        """Write ``first`` (read before the response started, so a bad cursor was a 400)
        and everything after it until the stream ends."""
        keepalive_s = self._ctx.settings.api_sse_keepalive_s
        await self._write(response, f"retry: {RETRY_MS}\n".encode() + comment("hopindex events"))
        batch = first
        while True:
            for event in batch:
                await self._write(response, frame(event))
                self.cursor = event.event_id
            if len(batch) < PAGE:
                if self._mode is StreamMode.BACKLOG:
                    return
                if time.monotonic() - self._written_at >= keepalive_s:
                    await self._write(response, comment("keep-alive"))
                if self._client_gone() or await self._closing(POLL_S):
                    return
            batch = await self.read_page()

    async def _closing(self, wait_s: float) -> bool:
        """True when the server is stopping (checked while waiting ``wait_s``)."""
        try:
            await asyncio.wait_for(self._ctx.closing.wait(), timeout=wait_s)
        except TimeoutError:
            return False
        return True


async def serve_stream(ctx: ApiContext, request: web.Request, *, index: str | None,
                       cursor: str | None, mode: StreamMode) -> web.StreamResponse:
    stream = EventStream(ctx, request, index=index, cursor=cursor, mode=mode)
    # Read before answering: an unknown or malformed cursor is still a JSON 400.
    first = await stream.read_page()
    if ctx.streams.open >= ctx.streams.limit:
        raise ApiError(429, "too_many_streams", f"{ctx.streams.limit} event streams are open "
                       "(HOPINDEX_API_MAX_EVENT_STREAMS); retry later",
                       headers={"Retry-After": "5"})
    response = web.StreamResponse(headers={"Content-Type": EVENT_STREAM_TYPE,
                                           "Cache-Control": "no-cache",
                                           "X-Accel-Buffering": "no",
                                           REQUEST_ID_HEADER: request[REQUEST_ID_KEY]})
    ctx.streams.open += 1
    try:
        await response.prepare(request)
        await stream.run(response, first)
        await response.write_eof()
    except ConnectionResetError:
        log.info("event_stream_client_gone", cursor=stream.cursor)
    except EventsGoneError as exc:
        log.warning("event_stream_gap", cursor=stream.cursor, oldest_id=exc.oldest_id)
        with contextlib.suppress(ConnectionResetError):
            await response.write(gap_frame(exc))
    except HopindexError as exc:
        # Headers are sent: the error goes out as an event, then the stream ends.
        log.warning("event_stream_failed", error_type=type(exc).__name__, error=str(exc))
        body = json.dumps({"error": {"code": "stream_failed", "message": str(exc)}})
        with contextlib.suppress(ConnectionResetError):
            await response.write(f"event: error\ndata: {body}\n\n".encode())
    finally:
        ctx.streams.open -= 1
    return response
