"""``/v1/indexes/{name}/documents``: ingest (202 with a job, or with ``dry_run=true``
200 with the plan; ``max_llm_tokens`` and ``max_cost`` replace those limits of the
index's default budget for this job; ``llm_mode`` replaces the index's default mode;
``split_by`` says how uploaded document files become documents), read one document
(``?id=``) and delete documents."""

from __future__ import annotations

from aiohttp import web

from hopindex.api.client.protocol import DOC_ID
from hopindex.api.client.requests import MAX_IDS_CONTEXT, DeleteDocuments
from hopindex.api.http.errors import ApiError, bad_request
from hopindex.api.http.params import (
    BUDGET_FIELDS,
    index_name,
    query_choice,
    query_enum,
    query_limits,
    query_llm_mode,
    read_json_object,
    require_prices,
    validated,
)
from hopindex.api.http.routing import Guard, Route, context
from hopindex.api.http.uploads import OnError, receive_documents, rejection
from hopindex.core.errors import NotFoundError
from hopindex.core.llm_modes import LLM_MODE
from hopindex.core.models import Job
from hopindex.core.redact import redact_text
from hopindex.methods.registry import get_index_method
from hopindex.readers import Reading, SplitBy, read_options

DRY_RUN = "dry_run"
# The document GET reads: a query parameter, since ids are free text ('/' and '#' in
# them), which the client's ``get_document`` names ``doc_id``.
ID = "id"


def accepted(job: Job) -> web.Response:
    return web.json_response(job.view(), status=202,
                             headers={"Location": f"/v1/jobs/{job.job_id}"})


async def ingest(request: web.Request) -> web.Response:
    ctx = context(request)
    settings = ctx.settings
    index = index_name(request.match_info["name"], field="name")
    method = request.query.get("method")
    if method is not None:
        get_index_method(method)  # refused before the upload is read, as the client words it
    on_error = query_enum(request, "on_error", OnError, OnError.REJECT)
    # Read before the body, so a bad value is refused without reading an upload. A read
    # key may ask for a dry run (the route's reads_only_with), which writes nothing.
    dry_run = query_choice(request, DRY_RUN, ("true", "false")) == "true"
    limits = query_limits(request)
    require_prices(ctx.client, limits)
    llm_mode = query_llm_mode(request)
    # Which files of a folder to send is the sender's choice (the clients apply
    # --include/--exclude before uploading); how each file splits is the server's.
    reading = Reading(split_by=query_enum(request, "split_by", SplitBy, SplitBy.SECTION))
    read = await receive_documents(request, ctx.blocking,
                                   max_body_bytes=settings.api_max_body_bytes,
                                   options=read_options(settings, reading))
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
    client = ctx.client
    if dry_run:
        plan = await ctx.blocking.run(lambda: client.plan_read(index, read, method=method,
                                                               llm_mode=llm_mode))
        return web.json_response(plan.as_dict())
    # The index's default budget is read when the job starts, off the event loop.
    # Without workers the job runs in this server's one job slot: behind another job of
    # its index it is refused (409 index_busy) rather than held; with workers it queues.
    job = await ctx.jobs.launch(lambda job_id: client.ingest_read(
        index, read, method=method, limits=limits, llm_mode=llm_mode, job_id=job_id,
        wait=False))
    return accepted(job)


async def get_document(request: web.Request) -> web.Response:
    """One document of the index by id: 400 naming ``id`` when it is missing or blank,
    404 naming it when no document has it."""
    ctx = context(request)
    index = index_name(request.match_info["name"], field="name")
    doc_id = request.query.get(ID)
    if doc_id is None:
        raise bad_request(f"missing required query parameter {ID!r}: the document's id",
                          field=ID)
    if not doc_id.strip():
        raise bad_request(f"{ID!r} must not be empty", field=ID)
    try:
        document = await ctx.blocking.run(ctx.client.get_document, index, doc_id)
    except NotFoundError as exc:
        if exc.where != DOC_ID:
            raise
        # Worded as every refusal of the service is answered (api/error_view.py), with
        # the field under the name this route gives it.
        raise ApiError(exc.http_status, exc.code, redact_text(str(exc)), field=ID) from None
    return web.json_response(document.as_dict())


async def delete_documents(request: web.Request) -> web.Response:
    ctx = context(request)
    index = index_name(request.match_info["name"], field="name")
    doc_ids = validated(DeleteDocuments, await read_json_object(request),
                        **{MAX_IDS_CONTEXT: ctx.settings.api_max_documents}).ids
    client = ctx.client
    job = await ctx.jobs.launch(lambda job_id: client.delete_documents(
        index, doc_ids, job_id=job_id, wait=False))
    return accepted(job)


ROUTES = [
    Route("POST", "/v1/indexes/{name}/documents", ingest, Guard.WRITE,
          query=("method", "on_error", "dry_run", "split_by", *BUDGET_FIELDS, LLM_MODE),
          reads_only_with=(DRY_RUN, "true")),
    Route("GET", "/v1/indexes/{name}/documents", get_document, Guard.READ, query=(ID,)),
    Route("DELETE", "/v1/indexes/{name}/documents", delete_documents, Guard.WRITE),
]
