"""``/v1/webhooks``: register, list and remove webhooks for an index's events."""

from __future__ import annotations

from aiohttp import web

from hopindex.api.client.requests import NewWebhook
from hopindex.api.http.params import index_name, query_string, read_json_object, validated
from hopindex.api.http.routing import Guard, Route, context, principal, require_index_scope
from hopindex.core.errors import NotFoundError


async def add_webhook(request: web.Request) -> web.Response:
    ctx = context(request)
    body = validated(NewWebhook, await read_json_object(request))
    require_index_scope(request, body.index)
    hook = await ctx.blocking.run(ctx.client.webhooks.add_webhook, body.index, body.url,
                                  body.secret)
    # The secret is shown once, here: listing never returns it.
    return web.json_response(hook.as_dict(), status=201,
                             headers={"Location": f"/v1/webhooks/{hook.webhook_id}"})


async def list_webhooks(request: web.Request) -> web.Response:
    ctx = context(request)
    raw_index = query_string(request, "index")
    index = index_name(raw_index) if raw_index is not None else None
    if index is not None:
        require_index_scope(request, index)
    who = principal(request)
    hooks = await ctx.blocking.run(ctx.client.webhooks.list_webhooks, index)
    return web.json_response({"webhooks": [h.as_dict() for h in hooks if who.covers(h.index)]})


async def remove_webhook(request: web.Request) -> web.Response:
    ctx = context(request)
    webhook_id = request.match_info["webhook_id"]
    webhooks = ctx.client.webhooks
    hooks = await ctx.blocking.run(webhooks.list_webhooks, None)
    hook = next((h for h in hooks if h.webhook_id == webhook_id), None)
    if hook is None:
        raise NotFoundError(f"no webhook {webhook_id!r}")
    # Looked up first: a key may remove only its own indexes' webhooks.
    require_index_scope(request, hook.index)
    await ctx.blocking.run(webhooks.remove_webhook, webhook_id)
    return web.Response(status=204)


ROUTES = [
    Route("POST", "/v1/webhooks", add_webhook, Guard.WRITE),
    Route("GET", "/v1/webhooks", list_webhooks, Guard.READ, query=("index",)),
    Route("DELETE", "/v1/webhooks/{webhook_id}", remove_webhook, Guard.WRITE),
]
