"""A real HTTP server on loopback that records every request and answers from a script.

The server adapters' request-shape tests point the official clients at it: the
clients build and send their requests exactly as they would to Elasticsearch or
Qdrant, the server keeps them for the test to hold against the engines'
documented REST APIs, and answers with bodies of the documented shapes that the
test chooses. It never imitates an engine's behaviour (no search, no storage).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(frozen=True, slots=True)
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def ndjson(self) -> list[Any]:
        return [json.loads(line) for line in self.body.decode().splitlines() if line.strip()]


@dataclass(slots=True)
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Responder = Callable[[Recorded], Reply]


class RecordingServer:
    """Serves ``respond(request)`` on 127.0.0.1 from a thread of its own."""

    def __init__(self, respond: Responder, *, headers: dict[str, str] | None = None) -> None:
        self.respond = respond
        self.requests: list[Recorded] = []
        self._headers = headers or {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="recording-server")
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> RecordingServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def take(self) -> list[Recorded]:
        """The requests recorded so far, forgetting them."""
        taken, self.requests = self.requests, []
        return taken

    async def _start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server  # aiohttp exposes the bound port only through the server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # a TCP site's server has sockets

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        recorded = Recorded(method=request.method, path=request.path,
                            query=dict(request.query), headers=dict(request.headers),
                            body=await request.read())
        self.requests.append(recorded)
        reply = self.respond(recorded)
        headers = {**self._headers, **reply.headers}
        if reply.body is None:
            return web.Response(status=reply.status, headers=headers)
        return web.Response(status=reply.status, body=json.dumps(reply.body).encode(),
                            content_type="application/json", headers=headers)


@contextmanager
def recording_server(respond: Responder, *,
                     headers: dict[str, str] | None = None) -> Iterator[RecordingServer]:
    server = RecordingServer(respond, headers=headers).start()
    try:
        yield server
    finally:
        server.stop()
