"""``POST /v1/indexes/{name}/query``: answer, ranked units with provenance, trace, usage."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from hopindex.api.http.errors import bad_request
from hopindex.api.http.params import (
    body_enum,
    body_int,
    body_number,
    body_string,
    check_fields,
    index_name,
    read_json_object,
)
from hopindex.api.http.routing import Guard, Route, context
from hopindex.methods.base import MAX_CANDIDATES, MAX_K, QueryOptions, Retrieval
from hopindex.methods.retrieval.fusion import FusionMode

QUERY_FIELDS = ("question", "method", "k", "retrieval", "fusion", "candidates",
                "dense_weight", "keyword_weight", "options")
MAX_METHOD_CHARS = 64
DEFAULT_K = 5


def query_options(body: dict[str, Any]) -> QueryOptions:
    """QueryOptions from a query body; ``options`` become the method-specific
    ``QueryOptions.params`` (the method that reads them checks them)."""
    options = body.get("options")
    if options is not None and not isinstance(options, dict):
        raise bad_request("field 'options' must be an object of method-specific options",
                          field="options")
    for name, value in (options or {}).items():
        if value is None or not isinstance(value, str | int | float | bool):
            raise bad_request(f"option {name!r} must be a string, number or boolean",
                              field=f"options.{name}")
    k = body_int(body, "k", 1, MAX_K) or DEFAULT_K
    candidates = body_int(body, "candidates", 1, MAX_CANDIDATES)
    weights = {name: weight for name in ("dense_weight", "keyword_weight")
               if (weight := body_number(body, name, minimum=0.0)) is not None}
    return QueryOptions(k=k, retrieval=body_enum(body, "retrieval", Retrieval),
                        fusion=body_enum(body, "fusion", FusionMode) or FusionMode.RRF,
                        # Fewer candidates than k cannot fill k: raised to k, as documented.
                        candidates=None if candidates is None else max(candidates, k),
                        params=dict(options or {}), **weights)


async def query(request: web.Request) -> web.Response:
    ctx = context(request)
    index = index_name(request.match_info["name"], field="name")
    body = await read_json_object(request)
    check_fields(body, QUERY_FIELDS, required=("question",))
    question = body_string(body, "question", max_chars=ctx.settings.api_max_query_chars,
                           required=True)
    method = body_string(body, "method", max_chars=MAX_METHOD_CHARS)
    options = query_options(body)
    assert question is not None  # required=True
    result = await ctx.blocking.run(ctx.service.query, index, question, method, options)
    return web.json_response(result.as_dict())


ROUTES = [Route("POST", "/v1/indexes/{name}/query", query, Guard.READ)]
