"""``/v1/webhooks``: register, list and remove webhooks for an index's events."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hopindex.api.events import register_webhook
from hopindex.api.http.errors import bad_request
from hopindex.api.http.params import (
    body_string,
    check_fields,
    index_name,
    query_string,
    read_json_object,
)
from hopindex.api.http.routing import Guard, Route, context, principal, require_index_scope
from hopindex.core.errors import NotFoundError
from hopindex.core.events import Webhook
from hopindex.core.redact import redact_url
from hopindex.scheduler.webhooks import standard_secret

MAX_URL_CHARS = 2048
MAX_SECRET_CHARS = 256


def webhook_view(hook: Webhook, *, with_secret: bool = False) -> dict[str, Any]:
    """A webhook as the API shows it: the URL without its userinfo or secret-looking
    query values (a read key sees every listing), the secret only when asked."""
    view: dict[str, Any] = {"id": hook.webhook_id, "index": hook.index,
                            "url": redact_url(hook.url), "created_at": hook.created_at,
                            "allow_private": hook.allow_private}
    if with_secret:
        view["secret"] = standard_secret(hook.secret)
    return view


async def add_webhook(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await read_json_object(request)
    check_fields(body, ("index", "url", "secret"), required=("index", "url"))
    # Present means given: ``"secret": null`` is a wrong type, as the spec says, not
    # "make one up" (that is what leaving the field out asks for).
    for name in ("index", "url", "secret"):
        if name in body and body[name] is None:
            raise bad_request(f"field {name!r} must be a string, not null", field=name)
    index = index_name(body_string(body, "index", required=True) or "")
    require_index_scope(request, index)
    url = body_string(body, "url", required=True, max_chars=MAX_URL_CHARS) or ""
    secret = body_string(body, "secret", max_chars=MAX_SECRET_CHARS)
    hook = await ctx.blocking.run(register_webhook, ctx.service.backends.events, index, url,
                                  secret, allow_private=ctx.settings.webhook_allow_private)
    # The secret is shown once, here: listing never returns it.
    return web.json_response(webhook_view(hook, with_secret=True), status=201,
                             headers={"Location": f"/v1/webhooks/{hook.webhook_id}"})


async def list_webhooks(request: web.Request) -> web.Response:
    ctx = context(request)
    raw_index = query_string(request, "index")
    index = index_name(raw_index) if raw_index is not None else None
    if index is not None:
        require_index_scope(request, index)
    who = principal(request)
    hooks = await ctx.blocking.run(ctx.service.backends.events.list_webhooks, index)
    return web.json_response({"webhooks": [webhook_view(h) for h in hooks
                                           if who.covers(h.index)]})


async def remove_webhook(request: web.Request) -> web.Response:
    ctx = context(request)
    webhook_id = request.match_info["webhook_id"]
    events = ctx.service.backends.events
    hooks = await ctx.blocking.run(events.list_webhooks, None)
    hook = next((h for h in hooks if h.webhook_id == webhook_id), None)
    if hook is None:
        raise NotFoundError(f"no webhook {webhook_id!r}")
    require_index_scope(request, hook.index)
    await ctx.blocking.run(events.delete_webhook, webhook_id)
    return web.Response(status=204)


ROUTES = [
    Route("POST", "/v1/webhooks", add_webhook, Guard.WRITE),
    Route("GET", "/v1/webhooks", list_webhooks, Guard.READ, query=("index",)),
    Route("DELETE", "/v1/webhooks/{webhook_id}", remove_webhook, Guard.WRITE),
]
