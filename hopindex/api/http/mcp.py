"""``/mcp``: the MCP server (api/mcp/) on the HTTP server's port, over the streamable
HTTP transport with SSE responses, so a tool's progress reaches the agent while it runs.

A request passes the same middlewares as every route first: no key is a 401, a wrong
key spends a failure token, and the key's principal travels into the MCP layer in the
ASGI scope's ``state``; there a read key is offered the read tools only and every tool
checks the key covers the index it names. The tools that read paths are not offered:
the server's filesystem is not the agent's.

The SDK's transport is an ASGI app; aiohttp serves it through asgi_bridge.py, in this
process and on this port. It runs stateless (no session kept between requests), so any
server behind a load balancer answers any request, as the rest of the API does.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web
from mcp.server import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from hopindex.api.access import Principal
from hopindex.api.http.asgi_bridge import serve_asgi
from hopindex.api.http.routing import ApiContext, Guard, Route, RouteKind, principal
from hopindex.api.mcp.server import McpServer
from hopindex.api.mcp.tools import Door
from hopindex.core.errors import AccessDeniedError

MCP_PATH = "/mcp"
# The key under which the request's principal reaches the MCP layer (scope["state"]).
PRINCIPAL_STATE = "hopindex_principal"


def principal_of(ctx: ServerRequestContext[Any, Any]) -> Principal:
    """The principal the auth middleware found for the HTTP request carrying this MCP
    message. None there is a request that did not come through the middlewares: refused."""
    scope = getattr(ctx.request, "scope", None) or {}
    found = scope.get("state", {}).get(PRINCIPAL_STATE)
    if not isinstance(found, Principal):
        raise AccessDeniedError("no API key reached the MCP server with this request")
    return found


class McpEndpoint:
    """The MCP server of one app, its transport's lifetime and its route handler."""

    def __init__(self, ctx: ApiContext) -> None:
        self.mcp = McpServer(ctx.client, door=Door.HTTP, offload=ctx.blocking.run,
                             jobs=ctx.jobs, principal_of=principal_of,
                             max_question_chars=ctx.settings.api_max_query_chars)
        # Inline records are the largest body a tool takes: the limit of an upload.
        self.manager = StreamableHTTPSessionManager(
            self.mcp.server, stateless=True, json_response=False,
            max_request_body_size=ctx.settings.api_max_body_bytes)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self, _app: web.Application) -> None:
        """Start the transport's task group in a task of its own: it is entered and left
        in the same task, whichever tasks aiohttp runs its start and cleanup in."""
        started = asyncio.Event()
        self._task = asyncio.create_task(self._run(started), name="hopindex-mcp")
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait({waiting, self._task}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if self._task.done():
            self._task.result()  # it failed to start: raise why

    async def _run(self, started: asyncio.Event) -> None:
        async with self.manager.run():
            started.set()
            await self._stop.wait()

    async def stop(self, _app: web.Application) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task

    async def handle(self, request: web.Request) -> web.StreamResponse:
        return await serve_asgi(self.manager.handle_request, request,
                                state={PRINCIPAL_STATE: principal(request)})

    def routes(self) -> list[Route]:
        """POST carries the messages; GET (a stream the server opens) and DELETE (end a
        session) are answered by the transport, which refuses them when stateless."""
        return [Route(method, MCP_PATH, self.handle, Guard.READ, RouteKind.STREAM)
                for method in ("POST", "GET", "DELETE")]
