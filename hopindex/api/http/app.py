"""The aiohttp application: routes, middlewares, and the parts handlers share."""

from __future__ import annotations

import asyncio

from aiohttp import web

from hopindex.api.blocking import BlockingRunner
from hopindex.api.client.local import LocalClient
from hopindex.api.http.event_tokens import EventTokens
from hopindex.api.http.keys import KeyRing, load_key_ring
from hopindex.api.http.mcp import McpEndpoint
from hopindex.api.http.metrics import configured_routes
from hopindex.api.http.middleware import (
    KEY_CHECKS,
    KeyChecks,
    answer_middleware,
    auth_middleware,
)
from hopindex.api.http.openapi.spec import build_spec
from hopindex.api.http.ratelimit import FailureLimiter
from hopindex.api.http.routes import ALL_ROUTES
from hopindex.api.http.routes.docs import BUNDLE_KEY, Bundle
from hopindex.api.http.routes.service import SPEC_KEY
from hopindex.api.http.routing import CONTEXT, ApiContext, StreamGate
from hopindex.api.job_launch import JobLauncher
from hopindex.api.service import Hopindex


def create_app(service: Hopindex, keys: KeyRing | None = None) -> web.Application:
    """The API over ``service`` (its settings give the limits); ``keys`` default to
    HOPINDEX_API_KEYS and HOPINDEX_API_KEYS_FILE. The caller closes ``service``."""
    settings = service.settings
    if keys is None:
        keys = load_key_ring(settings.api_keys, settings.api_keys_file)
    blocking = BlockingRunner(settings.api_concurrency)
    # Not closed by the app: closing the client would close the caller's service.
    client = LocalClient(service)
    ctx = ApiContext(client=client, settings=settings, keys=keys,
                     tokens=EventTokens(keys), blocking=blocking,
                     jobs=JobLauncher(client, blocking),
                     streams=StreamGate(limit=settings.api_max_event_streams))
    # Body limits are enforced while streaming (params.py, uploads.py); aiohttp's own
    # limit is set to match for anything read another way.
    app = web.Application(middlewares=[answer_middleware, auth_middleware],
                          client_max_size=settings.api_max_body_bytes)
    app[CONTEXT] = ctx
    app[KEY_CHECKS] = KeyChecks(
        failures=FailureLimiter(settings.api_auth_failure_burst,
                                settings.api_auth_failures_per_minute),
        slow=BlockingRunner(1, name="hopindex-key-check"))
    app[SPEC_KEY] = build_spec(settings)
    app[BUNDLE_KEY] = Bundle.load()
    mcp = McpEndpoint(ctx)
    # /mcp speaks JSON-RPC, not REST: declared to the middlewares like every route, and
    # kept out of the OpenAPI document (ALL_ROUTES), which describes the REST API.
    for route in [*configured_routes(ALL_ROUTES, settings), *mcp.routes()]:
        app.router.add_route(route.method, route.path, route.handler)
        ctx.routes[(route.method, route.path)] = route
    app.on_startup.append(mcp.start)
    app.on_shutdown.append(mcp.stop)
    app.on_shutdown.append(_end_streams)
    app.on_cleanup.append(_release)
    return app


async def _end_streams(app: web.Application) -> None:
    app[CONTEXT].closing.set()


async def _release(app: web.Application) -> None:
    ctx = app[CONTEXT]
    # Both wait for threads (a running embedded job, pending blocking calls).
    await asyncio.to_thread(ctx.jobs.close)
    await asyncio.to_thread(ctx.blocking.close)
    await asyncio.to_thread(app[KEY_CHECKS].slow.close)
