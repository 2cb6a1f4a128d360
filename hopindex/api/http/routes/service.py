"""The service's own routes: liveness, readiness, and the OpenAPI spec (no key needed)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

from hopindex.api.http.routing import ApiContext, Guard, Route, context
from hopindex.backends.registry import embedded_engine_folders
from hopindex.core.errors import HopindexError
from hopindex.workers.engine_route import check_engines

READY_TIMEOUT_S = 3.0
# Below READY_TIMEOUT_S, so a busy owner reads as "did not answer", naming it.
ENGINE_PING_TIMEOUT_S = 2.5
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
    checks = ctx.client.store_probes()
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
    """Ready when every store answers and the embedded engines can be reached: this
    process opens them, or their owner answers on the engine queue. ``engines`` says
    which, and who the owner is."""
    ctx = context(request)
    checks = _checks(ctx)
    engines: dict[str, Any] = {}

    def reach_engines() -> None:
        found = check_engines(ctx.settings, ENGINE_PING_TIMEOUT_S)
        if found is not None:
            engines.update(found.as_dict())

    if embedded_engine_folders(ctx.settings):
        checks["engines"] = reach_engines
    results = await asyncio.gather(*(_check(ctx, probe) for probe in checks.values()))
    found = dict(zip(checks, results, strict=True))
    ready = all(r == "ok" for r in results)
    body: dict[str, Any] = {"status": "ready" if ready else "unavailable", "checks": found}
    if engines:
        body["engines"] = engines
    return web.json_response(body, status=200 if ready else 503)


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(request.app[SPEC_KEY])


ROUTES = [
    Route("GET", "/healthz", healthz, Guard.PUBLIC),
    Route("GET", "/readyz", readyz, Guard.PUBLIC),
    Route("GET", "/v1/openapi.json", openapi, Guard.PUBLIC),
]
