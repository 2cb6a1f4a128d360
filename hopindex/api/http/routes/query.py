"""``POST /v1/indexes/{name}/query``: answer, ranked units with provenance, trace, usage.

An optional field given as ``null`` means its default, as if it were left out (the
spec says so). ``options`` are the method's own parameters: a name the method does
not take is refused, listing the ones it does (the service's rule, as for every
caller; the API only names the option as its body does, ``options.NAME``).

``"stream": true`` (or ``Accept: text/event-stream``) answers with server-sent events
instead (``query_sse.py``): a route of the streaming kind, so the request timeout is
applied here, to the whole of an unstreamed query and to a streamed one's first event.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from hopindex.api.client.local import LocalClient
from hopindex.api.client.requests import QueryRequest
from hopindex.api.http.errors import ApiError, bad_request
from hopindex.api.http.params import (
    MAX_JSON_BODY_BYTES,
    MAX_QUERY_CHARS_VARIABLE,
    index_name,
    read_json_object,
    validated,
)
from hopindex.api.http.query_sse import serve_query_stream
from hopindex.api.http.routing import Guard, Route, RouteKind, context
from hopindex.api.http.sse import EVENT_STREAM_TYPE
from hopindex.core.errors import InvalidInputError
from hopindex.methods.base import QueryOptions, QueryResult

# A fixed bound, not HOPINDEX_API_MAX_BODY_BYTES (that one is for documents): a query
# is a question of at most HOPINDEX_API_MAX_QUERY_CHARS and a few small fields.
MAX_QUERY_BODY_BYTES = MAX_JSON_BODY_BYTES
# Where the methods name a bad parameter; the API calls them options.
_PARAMS_WHERE = "params."


def as_answered(exc: BaseException) -> BaseException:
    """The service checks the method against the index (one that cannot read it is a
    400 naming those that can), then the options against that method; an option it
    refuses as ``params.NAME`` is answered as the body names it, ``options.NAME``."""
    if not isinstance(exc, InvalidInputError) or not exc.where.startswith(_PARAMS_WHERE):
        return exc
    field = "options." + exc.where.removeprefix(_PARAMS_WHERE)
    return bad_request(f"{field}: {str(exc).removeprefix(f'{exc.where}: ')}", field=field)


def answer(client: LocalClient, index: str, question: str, method: str | None,
           options: QueryOptions) -> QueryResult:
    try:
        return client.query(index, question, method=method, k=options.k, options=options)
    except InvalidInputError as exc:
        raise as_answered(exc) from None


def wants_stream(request: web.Request, body: QueryRequest) -> bool:
    if body.stream is not None:
        return body.stream
    return EVENT_STREAM_TYPE in request.headers.get("Accept", "")


async def read_query_body(request: web.Request) -> dict[str, Any]:
    try:
        return await read_json_object(request, MAX_QUERY_BODY_BYTES)
    except ApiError as exc:
        if exc.status != 413:
            raise
        raise ApiError(413, "body_too_large", f"a query body is over the limit of "
                       f"{MAX_QUERY_BODY_BYTES:,} bytes (fixed; the question is limited by "
                       f"{MAX_QUERY_CHARS_VARIABLE})",
                       details={"limit_bytes": MAX_QUERY_BODY_BYTES}) from None


async def query(request: web.Request) -> web.StreamResponse:
    ctx = context(request)
    index = index_name(request.match_info["name"], field="name")
    body = validated(QueryRequest, await read_query_body(request))
    # The question's limit is a setting, which the model does not know.
    if len(body.question) > (limit := ctx.settings.api_max_query_chars):
        raise bad_request(f"field 'question' is {len(body.question):,} characters, over "
                          f"{MAX_QUERY_CHARS_VARIABLE}={limit:,}", field="question",
                          code="too_long")
    options = body.query_options()
    if wants_stream(request, body):
        return await serve_query_stream(ctx, request, lambda: ctx.client.query(
            index, body.question, method=body.method, k=options.k, options=options,
            stream=True), as_answered)
    async with asyncio.timeout(ctx.settings.api_request_timeout_s):
        result = await ctx.blocking.run(answer, ctx.client, index, body.question,
                                        body.method, options)
    return web.json_response(result.as_dict())


ROUTES = [Route("POST", "/v1/indexes/{name}/query", query, Guard.READ, RouteKind.STREAM)]
