"""What each route needs before its handler runs, and where handlers find the server's parts.

A route is declared once, with the access it needs; the middlewares read that
declaration, so a handler cannot forget authentication, and the OpenAPI tests
compare these declarations with the spec.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web

from hopindex.api import access
from hopindex.api.access import Access, Principal
from hopindex.api.blocking import BlockingRunner
from hopindex.api.client.local import LocalClient
from hopindex.api.http.event_tokens import EventTokens
from hopindex.api.http.keys import KeyRing
from hopindex.api.job_launch import JobLauncher
from hopindex.core.settings import Settings

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Guard(enum.StrEnum):
    PUBLIC = "public"  # probes, metrics, the spec: no key needed
    READ = "read"
    WRITE = "write"

    @property
    def access(self) -> Access | None:
        return None if self is Guard.PUBLIC else Access(self.value)


class Credential(enum.StrEnum):
    API_KEY = "api_key"  # Authorization: Bearer KEY
    # Or ?token= from POST /v1/indexes/{name}/events/token, for pages (event_tokens.py).
    API_KEY_OR_EVENT_TOKEN = "api_key_or_event_token"


class RouteKind(enum.StrEnum):
    JSON = "json"  # answers within HOPINDEX_API_REQUEST_TIMEOUT_S
    # A body streamed for as long as it takes (server-sent events until the client
    # leaves, an index's export): no request timeout.
    STREAM = "stream"


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    path: str
    handler: Handler
    guard: Guard
    kind: RouteKind = RouteKind.JSON
    # The query parameters it reads; any other is refused, as unknown body fields are.
    query: tuple[str, ...] = ()
    credential: Credential = Credential.API_KEY
    # A query parameter and value with which the request writes nothing (a dry run), so
    # read access is enough for it whatever ``guard`` says.
    reads_only_with: tuple[str, str] | None = None

    def access_for(self, request: web.Request) -> Access | None:
        """The access this request needs: the guard's, or read access for a request that
        asks to write nothing, with the parameter given once and nothing else: a request
        that could be read two ways needs the guard's access."""
        needed = self.guard.access
        if needed is Access.WRITE and self.reads_only_with is not None:
            name, value = self.reads_only_with
            if request.query.getall(name, []) == [value]:
                return Access.READ
        return needed


@dataclass(slots=True)
class StreamGate:
    """Counts open event streams against HOPINDEX_API_MAX_EVENT_STREAMS."""

    limit: int
    open: int = 0


@dataclass(slots=True)
class ApiContext:
    # Every route works through the client, as an application in this process would, so
    # the API answers with the client's results and refuses with its errors.
    client: LocalClient
    settings: Settings
    keys: KeyRing
    tokens: EventTokens
    blocking: BlockingRunner
    jobs: JobLauncher
    streams: StreamGate
    # Set when the server stops, so open event streams end instead of holding it up.
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    # Filled at start-up; maps (METHOD, path template) to its declaration.
    routes: dict[tuple[str, str], Route] = field(default_factory=dict)


CONTEXT = web.AppKey("hopindex_context", ApiContext)
PRINCIPAL_KEY = web.RequestKey("hopindex_principal", Principal)
REQUEST_ID_KEY = web.RequestKey("hopindex_request_id", str)
REQUEST_ID_HEADER = "X-Request-Id"


def context(request: web.Request) -> ApiContext:
    return request.app[CONTEXT]


def principal(request: web.Request) -> Principal:
    return request[PRINCIPAL_KEY]


def route_of(request: web.Request) -> Route | None:
    resource = request.match_info.route.resource
    if resource is None:
        return None
    return context(request).routes.get((request.method, resource.canonical))


def require_access(request: web.Request, needed: Access) -> None:
    """403 unless the request's key has ``needed`` access (the route's guard, or what a
    handler finds the request needs once it knows more)."""
    access.require_access(principal(request), needed)


def require_index_scope(request: web.Request, index: str) -> None:
    """403 unless the request's key covers ``index``."""
    access.require_index_scope(principal(request), index)
