"""``/v1/indexes/{name}/links``: a ``kgbridge`` index's SAME_AS links, listed and
rejected by hand."""

from __future__ import annotations

from aiohttp import web

from hopindex.api.http.params import (
    body_string,
    check_fields,
    index_name,
    query_string,
    read_json_object,
)
from hopindex.api.http.routing import Guard, Route, context
from hopindex.api.links import MAX_BY_CHARS


async def list_links(request: web.Request) -> web.Response:
    """The links, of one entity name (``?entity=``) or all (400 for an index of
    another method, 404 for an unknown index)."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    entity = query_string(request, "entity")
    found = await ctx.blocking.run(ctx.service.list_links, name, entity)
    return web.json_response({"links": found})


async def reject_link(request: web.Request) -> web.Response:
    """Reject one link for good, saying who (``{"by": ...}``); the answer is the
    rejected link, or the first rejection of a link rejected before."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    link_id = request.match_info["link_id"]
    body = await read_json_object(request)
    check_fields(body, ("by",), required=("by",))
    by = body_string(body, "by", required=True, max_chars=MAX_BY_CHARS) or ""
    rejected = await ctx.blocking.run(ctx.service.reject_link, name, link_id, by)
    return web.json_response(rejected)


ROUTES = [
    Route("GET", "/v1/indexes/{name}/links", list_links, Guard.READ, query=("entity",)),
    Route("POST", "/v1/indexes/{name}/links/{link_id}/reject", reject_link, Guard.WRITE),
]
