"""``/v1/indexes/{name}/links``: a ``kgbridge`` index's SAME_AS links, listed and
rejected by hand.

Aliases of the ``links.list`` and ``links.reject`` operations the method registers
(``/v1/indexes/{name}/operations/{operation}``), kept for the clients written against
them: they answer as they always have, and run the operations through the client, so
this module names no method.
"""

from __future__ import annotations

from aiohttp import web

from hopindex.api.client.requests import LINK_REJECT, RejectLink
from hopindex.api.http.params import index_name, query_string, read_json_object, validated
from hopindex.api.http.routing import Guard, Route, context

LIST = "links.list"
REJECT = LINK_REJECT


async def list_links(request: web.Request) -> web.Response:
    """The links, of one entity name (``?entity=``) or all (400 for an index of
    another method, 404 for an unknown index)."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    entity = query_string(request, "entity")
    params = {} if entity is None else {"entity": entity}
    found = await ctx.blocking.run(ctx.client.operations.run_operation, name, LIST, params)
    return web.json_response({"links": found})


async def reject_link(request: web.Request) -> web.Response:
    """Reject one link for good, saying who (``{"by": ...}``); the answer is the
    rejected link, or the first rejection of a link rejected before."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    link_id = request.match_info["link_id"]
    by = validated(RejectLink, await read_json_object(request)).by
    rejected = await ctx.blocking.run(ctx.client.operations.run_operation, name, REJECT,
                                      {"link_id": link_id, "by": by})
    return web.json_response(rejected)


ROUTES = [
    Route("GET", "/v1/indexes/{name}/links", list_links, Guard.READ, query=("entity",)),
    Route("POST", "/v1/indexes/{name}/links/{link_id}/reject", reject_link, Guard.WRITE),
]
