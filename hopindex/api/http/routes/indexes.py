"""``/v1/indexes``: create, list, describe, repair, rebuild and delete indexes, and
the default LLM budget and LLM mode of an index's jobs."""

from __future__ import annotations

from aiohttp import web

from hopindex.api.client.models import IndexDescription
from hopindex.api.client.requests import BudgetRequest, CreateIndex, LlmModeRequest
from hopindex.api.http.errors import ApiError
from hopindex.api.http.params import (
    index_name,
    query_choice,
    query_llm_mode,
    read_json_object,
    require_prices,
    validated,
)
from hopindex.api.http.routing import (
    ApiContext,
    Guard,
    Route,
    context,
    principal,
    require_index_scope,
)
from hopindex.core.budget import BudgetLimits
from hopindex.core.errors import IndexExistsError
from hopindex.core.llm_modes import LLM_MODE
from hopindex.core.models import Job


async def list_indexes(request: web.Request) -> web.Response:
    ctx = context(request)
    who = principal(request)
    found = await ctx.blocking.run(ctx.client.indexes.list_indexes)
    return web.json_response({"indexes": [i.as_dict() for i in found if who.covers(i.name)]})


def _create(ctx: ApiContext, name: str, method: str | None) -> IndexDescription:
    try:
        return ctx.client.indexes.create_index(name, method)
    except IndexExistsError as exc:
        # The body field that names it, which the error type cannot know.
        raise ApiError(409, exc.code, str(exc), field="name") from None


async def create_index(request: web.Request) -> web.Response:
    ctx = context(request)
    body = validated(CreateIndex, await read_json_object(request))
    name = body.name
    require_index_scope(request, name)
    created = await ctx.blocking.run(_create, ctx, name, body.method)
    return web.json_response(created.as_dict(), status=201,
                             headers={"Location": f"/v1/indexes/{name}"})


async def get_index(request: web.Request) -> web.Response:
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    verify = query_choice(request, "verify", ("true", "false")) == "true"
    described = await ctx.blocking.run(
        lambda: ctx.client.indexes.describe_index(name, verify=verify))
    return web.json_response(described.as_dict())


async def delete_index(request: web.Request) -> web.Response:
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    await ctx.blocking.run(ctx.client.indexes.delete_index, name)
    return web.Response(status=204)


async def repair_index(request: web.Request) -> web.Response:
    """Redo the index's outstanding work (202 with the job, queued behind the index's
    unfinished jobs with workers; 409 ``index_busy`` without), in ``llm_mode`` when
    given."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    llm_mode = query_llm_mode(request)
    indexes = ctx.client.indexes
    return _accepted(await ctx.jobs.launch(lambda job_id: indexes.repair_index(
        name, job_id=job_id, wait=False, llm_mode=llm_mode)))


async def rebuild_index(request: web.Request) -> web.Response:
    """Build the index's levels phases built on request again (202 with the job; 400
    when its method has none; queued or 409 ``index_busy`` as a repair)."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    llm_mode = query_llm_mode(request)
    indexes = ctx.client.indexes
    return _accepted(await ctx.jobs.launch(lambda job_id: indexes.rebuild_index(
        name, job_id=job_id, wait=False, llm_mode=llm_mode)))


def _accepted(job: Job) -> web.Response:
    return web.json_response(job.view(), status=202,
                             headers={"Location": f"/v1/jobs/{job.job_id}"})


async def get_budget(request: web.Request) -> web.Response:
    """The index's default budget: ``{"index", "budget"}``."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    budget = await ctx.blocking.run(ctx.client.indexes.get_budget, name)
    return web.json_response(budget.as_dict())


async def put_budget(request: web.Request) -> web.Response:
    """Replace the index's default budget with the body's limits (none: no default)."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    limits = validated(BudgetRequest, await read_json_object(request)).limits()
    require_prices(ctx.client, limits)
    budget = await ctx.blocking.run(ctx.client.indexes.set_budget, name, limits)
    return web.json_response(budget.as_dict())


async def delete_budget(request: web.Request) -> web.Response:
    """Remove the index's default budget: later jobs run without one unless they give
    their own."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    await ctx.blocking.run(ctx.client.indexes.set_budget, name, BudgetLimits())
    return web.Response(status=204)


async def get_llm_mode(request: web.Request) -> web.Response:
    """The index's default LLM mode: ``{"index", "llm_mode", "effective"}``."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    mode = await ctx.blocking.run(ctx.client.indexes.get_llm_mode, name)
    return web.json_response(mode.as_dict())


async def put_llm_mode(request: web.Request) -> web.Response:
    """Set the index's default LLM mode to the body's (null or left out: none)."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    mode = validated(LlmModeRequest, await read_json_object(request)).llm_mode
    answer = await ctx.blocking.run(ctx.client.indexes.set_llm_mode, name, mode)
    return web.json_response(answer.as_dict())


async def delete_llm_mode(request: web.Request) -> web.Response:
    """Remove the index's default LLM mode: later jobs that name none run in the
    server's."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    await ctx.blocking.run(ctx.client.indexes.set_llm_mode, name, None)
    return web.Response(status=204)


LLM_MODE_PATH = "/v1/indexes/{name}/llm-mode"

ROUTES = [
    Route("GET", "/v1/indexes", list_indexes, Guard.READ),
    Route("POST", "/v1/indexes", create_index, Guard.WRITE),
    Route("GET", "/v1/indexes/{name}", get_index, Guard.READ, query=("verify",)),
    Route("DELETE", "/v1/indexes/{name}", delete_index, Guard.WRITE),
    Route("POST", "/v1/indexes/{name}/repair", repair_index, Guard.WRITE, query=(LLM_MODE,)),
    Route("POST", "/v1/indexes/{name}/rebuild", rebuild_index, Guard.WRITE,
          query=(LLM_MODE,)),
    Route("GET", "/v1/indexes/{name}/budget", get_budget, Guard.READ),
    Route("PUT", "/v1/indexes/{name}/budget", put_budget, Guard.WRITE),
    Route("DELETE", "/v1/indexes/{name}/budget", delete_budget, Guard.WRITE),
    Route("GET", LLM_MODE_PATH, get_llm_mode, Guard.READ),
    Route("PUT", LLM_MODE_PATH, put_llm_mode, Guard.WRITE),
    Route("DELETE", LLM_MODE_PATH, delete_llm_mode, Guard.WRITE),
]
