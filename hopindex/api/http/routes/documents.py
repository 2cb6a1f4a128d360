"""``/v1/indexes/{name}/documents``: ingest (202 with a job, or with ``dry_run=true``
200 with the plan; ``max_llm_tokens`` and ``max_cost`` replace those limits of the
index's default budget for this job) and delete documents."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hopindex.api.budgets import ingest_budget
from hopindex.api.http.errors import ApiError, bad_request
from hopindex.api.http.params import (
    BUDGET_FIELDS,
    check_fields,
    index_name,
    query_choice,
    query_enum,
    query_limits,
    read_json_object,
    require_prices,
)
from hopindex.api.http.routing import Guard, Route, context
from hopindex.api.http.uploads import OnError, receive_documents, rejection
from hopindex.core.models import Job
from hopindex.core.text import unstorable_field
from hopindex.methods.registry import index_method_names
from hopindex.scheduler.writers import WaitPolicy

MAX_DOC_ID_CHARS = 1000
DRY_RUN = "dry_run"


def accepted(job: Job) -> web.Response:
    return web.json_response(job.as_dict(), status=202,
                             headers={"Location": f"/v1/jobs/{job.job_id}"})


async def ingest(request: web.Request) -> web.Response:
    ctx = context(request)
    settings = ctx.settings
    index = index_name(request.match_info["name"], field="name")
    method = query_choice(request, "method", index_method_names())
    on_error = query_enum(request, "on_error", OnError, OnError.REJECT)
    # Read before the body, so a bad value is refused without reading an upload. A read
    # key may ask for a dry run (the route's reads_only_with), which writes nothing.
    dry_run = query_choice(request, DRY_RUN, ("true", "false")) == "true"
    limits = query_limits(request)
    require_prices(ctx.service, limits)
    read = await receive_documents(request, ctx.blocking,
                                   max_body_bytes=settings.api_max_body_bytes,
                                   max_document_bytes=settings.max_document_bytes)
    count = len(read.documents) + len(read.errors)
    if count > settings.api_max_documents:
        raise ApiError(413, "too_many_documents", f"the body holds {count:,} records, over the "
                       f"limit of {settings.api_max_documents:,} per request "
                       "(HOPINDEX_API_MAX_DOCUMENTS); split it", field="body",
                       details={"limit": settings.api_max_documents})
    if not read.documents and not read.errors:
        raise bad_request("the body holds no documents", field="body")
    # Skipping bad records makes sense among good ones; a body of bad ones is refused.
    if read.errors and (on_error is OnError.REJECT or not read.documents):
        raise rejection(read.errors)
    service = ctx.service
    if dry_run:
        plan = await ctx.blocking.run(service.plan_ingest_documents, index, read.documents,
                                      read.errors, method=method)
        return web.json_response(plan.as_dict())
    # The index's default budget is read when the job starts, off the event loop.
    # Without workers the job runs in this server's one job slot: behind another job of
    # its index it is refused (409 index_busy) rather than held; with workers it queues.
    job = await ctx.jobs.launch(lambda job_id: service.ingest_documents(
        index, read.documents, read.errors, method=method, job_id=job_id,
        budget=ingest_budget(service, index, limits), wait=WaitPolicy.NO_WAIT))
    return accepted(job)


def _doc_ids(body: dict[str, Any], limit: int) -> list[str]:
    ids = body["ids"]
    if not isinstance(ids, list) or not ids:
        raise bad_request("field 'ids' must be a non-empty list of document ids", field="ids")
    if len(ids) > limit:
        raise ApiError(413, "too_many_documents", f"{len(ids):,} ids, over the limit of "
                       f"{limit:,} per request (HOPINDEX_API_MAX_DOCUMENTS)", field="ids",
                       details={"limit": limit})
    for position, doc_id in enumerate(ids):
        if not isinstance(doc_id, str) or not doc_id.strip() or len(doc_id) > MAX_DOC_ID_CHARS:
            raise bad_request(f"ids[{position}] must be a non-empty string of at most "
                              f"{MAX_DOC_ID_CHARS} characters", field=f"ids[{position}]")
        unstorable = unstorable_field([(f"ids[{position}]", doc_id)])
        if unstorable is not None:
            raise bad_request(str(unstorable), field=unstorable.field)
    return [str(i) for i in ids]


async def delete_documents(request: web.Request) -> web.Response:
    ctx = context(request)
    index = index_name(request.match_info["name"], field="name")
    body = await read_json_object(request)
    check_fields(body, ("ids",), required=("ids",))
    doc_ids = _doc_ids(body, ctx.settings.api_max_documents)
    service = ctx.service
    job = await ctx.jobs.launch(lambda job_id: service.delete_documents(
        index, doc_ids, job_id=job_id, wait=WaitPolicy.NO_WAIT))
    return accepted(job)


ROUTES = [
    Route("POST", "/v1/indexes/{name}/documents", ingest, Guard.WRITE,
          query=("method", "on_error", "dry_run", *BUDGET_FIELDS),
          reads_only_with=(DRY_RUN, "true")),
    Route("DELETE", "/v1/indexes/{name}/documents", delete_documents, Guard.WRITE),
]
