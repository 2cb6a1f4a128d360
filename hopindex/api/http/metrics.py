"""``/metrics``: the process's Prometheus registry in the text exposition format.

Public like the probes, so Prometheus scrapes it without a key; its label values
name indexes, never documents or keys, so keep the port private or behind the
same proxy as the API.
"""

from __future__ import annotations

from aiohttp import web

from hopindex.api.http.routing import Guard, Route, context
from hopindex.monitoring.exposition import render_metrics


async def metrics(request: web.Request) -> web.Response:
    # Collecting walks every metric: off the loop, like any other blocking call.
    body, content_type = await context(request).blocking.run(render_metrics)
    return web.Response(body=body, headers={"Content-Type": content_type})


ROUTES = [Route("GET", "/metrics", metrics, Guard.PUBLIC)]
