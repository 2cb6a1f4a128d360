"""``/v1/jobs``: list jobs, show one, cancel one, resume one paused on its LLM budget."""

from __future__ import annotations

import re

from aiohttp import web

from hopindex.api.client.local import LocalJobs
from hopindex.api.client.requests import BudgetRequest
from hopindex.api.http.errors import ApiError, bad_request
from hopindex.api.http.params import (
    index_name,
    query_int,
    query_string,
    read_json_object,
    require_prices,
    validated,
)
from hopindex.api.http.routing import Guard, Route, context, principal, require_index_scope
from hopindex.core.budget import BudgetLimits
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import Job, JobState

MAX_LIST = 1000
DEFAULT_LIST = 50
JOB_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
_JOB_ID = re.compile(JOB_ID_PATTERN)


def _job_id(request: web.Request) -> str:
    job_id = request.match_info["job_id"]
    if not _JOB_ID.fullmatch(job_id):
        raise bad_request(f"malformed job id {job_id!r}", field="job_id")
    return job_id


def _scoped_jobs(jobs: LocalJobs, indexes: frozenset[str], limit: int) -> list[Job]:
    found = [j for index in sorted(indexes) for j in jobs.list_jobs(index, limit)]
    return sorted(found, key=lambda j: j.created_at, reverse=True)[:limit]


async def list_jobs(request: web.Request) -> web.Response:
    ctx = context(request)
    limit = query_int(request, "limit", DEFAULT_LIST, 1, MAX_LIST)
    index = query_string(request, "index")
    who = principal(request)
    if index is not None:
        index = index_name(index)
        require_index_scope(request, index)
        jobs = await ctx.blocking.run(ctx.client.jobs.list_jobs, index, limit)
    elif who.indexes is None:
        jobs = await ctx.blocking.run(ctx.client.jobs.list_jobs, None, limit)
    else:
        jobs = await ctx.blocking.run(_scoped_jobs, ctx.client.jobs, who.indexes, limit)
    return web.json_response({"jobs": [j.view() for j in jobs]})


async def _scoped_job(request: web.Request) -> Job:
    ctx = context(request)
    job = await ctx.blocking.run(ctx.client.jobs.get_job, _job_id(request))
    require_index_scope(request, job.index)
    return job


async def get_job(request: web.Request) -> web.Response:
    return web.json_response((await _scoped_job(request)).view())


async def cancel_job(request: web.Request) -> web.Response:
    ctx = context(request)
    # A job that ends between the read and the cancel is refused by cancel_job itself
    # (JobFinishedError, 409): the rule lives there, not here.
    job = await _scoped_job(request)
    cancelled = await ctx.blocking.run(ctx.client.jobs.cancel_job, job.job_id)
    return web.json_response(cancelled.view())


async def resume_job(request: web.Request) -> web.Response:
    """Continue a job paused on its LLM budget (200 with the job; 409 when it is not
    paused). The optional body's limits replace the job's own."""
    ctx = context(request)
    body = await read_json_object(request) if request.body_exists else {}
    limits = validated(BudgetRequest, body).limits()
    require_prices(ctx.client, limits)
    job = await _scoped_job(request)
    if job.state is not JobState.PAUSED:
        raise _not_paused(job)
    resumed = await ctx.blocking.run(_resume, ctx.client.jobs, job.job_id, limits)
    return web.json_response(resumed.view())


def _resume(jobs: LocalJobs, job_id: str, limits: BudgetLimits) -> Job:
    try:
        return jobs.resume_job(job_id, limits)
    except InvalidInputError as exc:
        # It stopped being paused since it was read: a conflict with its state, as above.
        job = jobs.get_job(job_id)
        if exc.where == "job_id" and job.state is not JobState.PAUSED:
            raise _not_paused(job) from None
        raise


def _not_paused(job: Job) -> ApiError:
    return ApiError(409, "job_not_paused", f"job {job.job_id} is {job.state.value}, not "
                    "paused; only a job paused on its LLM budget resumes", field="job_id")


ROUTES = [
    Route("GET", "/v1/jobs", list_jobs, Guard.READ, query=("index", "limit")),
    Route("GET", "/v1/jobs/{job_id}", get_job, Guard.READ),
    Route("POST", "/v1/jobs/{job_id}/cancel", cancel_job, Guard.WRITE),
    Route("POST", "/v1/jobs/{job_id}/resume", resume_job, Guard.WRITE),
]
