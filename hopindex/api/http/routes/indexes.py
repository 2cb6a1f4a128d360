"""``/v1/indexes``: create, list, describe, repair, rebuild and delete indexes, and
the default LLM budget of an index's jobs."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hopindex.api.budgets import index_budget, set_index_budget
from hopindex.api.http.errors import ApiError
from hopindex.api.http.params import (
    BUDGET_FIELDS,
    body_choice,
    body_limits,
    check_fields,
    index_name,
    query_choice,
    read_json_object,
    require_prices,
)
from hopindex.api.http.routing import Guard, Route, context, principal, require_index_scope
from hopindex.api.index_views import describe_index, index_view
from hopindex.api.service import Hopindex
from hopindex.core.budget import BudgetLimits
from hopindex.methods.registry import index_method_names
from hopindex.scheduler.submit import ensure_index
from hopindex.scheduler.writers import WaitPolicy


async def list_indexes(request: web.Request) -> web.Response:
    ctx = context(request)
    who = principal(request)
    found = await ctx.blocking.run(ctx.service.list_indexes)
    return web.json_response({"indexes": [index_view(i) for i in found if who.covers(i.name)]})


def _create(service: Hopindex, name: str, method: str | None) -> dict[str, Any]:
    if service.backends.state.get_index(name) is not None:
        raise ApiError(409, "index_exists", f"index {name!r} exists; ingest into it, or "
                                            "delete it first", field="name")
    ensure_index(service.runtime, name, method)
    return describe_index(service, name)


async def create_index(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await read_json_object(request)
    check_fields(body, ("name", "method"), required=("name",))
    if not isinstance(body["name"], str):
        raise ApiError(400, "invalid_input", "field 'name' must be a string", field="name")
    name = index_name(body["name"], field="name")
    require_index_scope(request, name)
    method = body_choice(body, "method", index_method_names())
    view = await ctx.blocking.run(_create, ctx.service, name, method)
    return web.json_response(view, status=201, headers={"Location": f"/v1/indexes/{name}"})


async def get_index(request: web.Request) -> web.Response:
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    verify = query_choice(request, "verify", ("true", "false")) == "true"
    return web.json_response(await ctx.blocking.run(
        lambda: describe_index(ctx.service, name, verify=verify)))


async def delete_index(request: web.Request) -> web.Response:
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    await ctx.blocking.run(ctx.service.delete_index, name)
    return web.Response(status=204)


async def repair_index(request: web.Request) -> web.Response:
    """Redo the index's outstanding work (202 with the job, queued behind the index's
    unfinished jobs with workers; 409 ``index_busy`` without)."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    service = ctx.service
    job = await ctx.jobs.launch(lambda job_id: service.repair_index(
        name, job_id=job_id, wait=WaitPolicy.NO_WAIT))
    return web.json_response(job.as_dict(), status=202,
                             headers={"Location": f"/v1/jobs/{job.job_id}"})


async def rebuild_index(request: web.Request) -> web.Response:
    """Build the index's levels phases built on request again (202 with the job; 400
    when its method has none; queued or 409 ``index_busy`` as a repair)."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    service = ctx.service
    job = await ctx.jobs.launch(lambda job_id: service.rebuild_index(
        name, job_id=job_id, wait=WaitPolicy.NO_WAIT))
    return web.json_response(job.as_dict(), status=202,
                             headers={"Location": f"/v1/jobs/{job.job_id}"})


async def get_budget(request: web.Request) -> web.Response:
    """The index's default budget: ``{"index", "budget"}``."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    return web.json_response(await ctx.blocking.run(index_budget, ctx.service, name))


async def put_budget(request: web.Request) -> web.Response:
    """Replace the index's default budget with the body's limits (none: no default)."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    body = await read_json_object(request)
    check_fields(body, BUDGET_FIELDS)
    limits = body_limits(body)
    require_prices(ctx.service, limits)
    return web.json_response(await ctx.blocking.run(set_index_budget, ctx.service, name,
                                                    limits))


async def delete_budget(request: web.Request) -> web.Response:
    """Remove the index's default budget: later jobs run without one unless they give
    their own."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    await ctx.blocking.run(set_index_budget, ctx.service, name, BudgetLimits())
    return web.Response(status=204)


ROUTES = [
    Route("GET", "/v1/indexes", list_indexes, Guard.READ),
    Route("POST", "/v1/indexes", create_index, Guard.WRITE),
    Route("GET", "/v1/indexes/{name}", get_index, Guard.READ, query=("verify",)),
    Route("DELETE", "/v1/indexes/{name}", delete_index, Guard.WRITE),
    Route("POST", "/v1/indexes/{name}/repair", repair_index, Guard.WRITE),
    Route("POST", "/v1/indexes/{name}/rebuild", rebuild_index, Guard.WRITE),
    Route("GET", "/v1/indexes/{name}/budget", get_budget, Guard.READ),
    Route("PUT", "/v1/indexes/{name}/budget", put_budget, Guard.WRITE),
    Route("DELETE", "/v1/indexes/{name}/budget", delete_budget, Guard.WRITE),
]
