"""The service's own routes: liveness, readiness, and the OpenAPI spec (no key needed)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

from hopindex.api.http.routing import ApiContext, Guard, Route, context
from hopindex.core.errors import HopindexError

READY_TIMEOUT_S = 3.0
# Built once with the app (hopindex.api.http.openapi.spec.build_spec).
SPEC_KEY = web.AppKey("hopindex_openapi", dict[str, Any])


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


def _ping_broker(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url, socket_timeout=READY_TIMEOUT_S,
                                  socket_connect_timeout=READY_TIMEOUT_S)
    try:
        client.ping()
    finally:
        client.close()


def _checks(ctx: ApiContext) -> dict[str, Callable[[], object]]:
    backends = ctx.service.backends
    checks: dict[str, Callable[[], object]] = {
        "state": backends.state.list_indexes,
        "events": backends.events.last_event_id,
    }
    if ctx.settings.broker_url:
        url = ctx.settings.broker_url
        checks["broker"] = lambda: _ping_broker(url)
    return checks


async def _check(ctx: ApiContext, probe: Callable[[], object]) -> str:
    try:
        async with asyncio.timeout(READY_TIMEOUT_S):
            await ctx.blocking.run(probe)
    except TimeoutError:
        return f"no answer within {READY_TIMEOUT_S:g}s"
    except (HopindexError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # a client library's own error type: still "not ready"
        return f"{type(exc).__name__}"
    return "ok"


async def readyz(request: web.Request) -> web.Response:
    ctx = context(request)
    checks = _checks(ctx)
    results = await asyncio.gather(*(_check(ctx, probe) for probe in checks.values()))
    found = dict(zip(checks, results, strict=True))
    ready = all(r == "ok" for r in results)
    return web.json_response({"status": "ready" if ready else "unavailable", "checks": found},
                             status=200 if ready else 503)


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(request.app[SPEC_KEY])


ROUTES = [
    Route("GET", "/healthz", healthz, Guard.PUBLIC),
    Route("GET", "/readyz", readyz, Guard.PUBLIC),
    Route("GET", "/v1/openapi.json", openapi, Guard.PUBLIC),
]
