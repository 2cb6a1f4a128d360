"""``POST /v1/indexes/{name}/query``: answer, ranked units with provenance, trace, usage.

An optional field given as ``null`` means its default, as if it were left out (the
spec says so). ``options`` are the method's own parameters: a name the method does
not take is refused, listing the ones it does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from hopindex.api.http.errors import ApiError, bad_request
from hopindex.api.http.params import (
    MAX_JSON_BODY_BYTES,
    MAX_QUERY_CHARS_VARIABLE,
    body_enum,
    body_int,
    body_number,
    body_string,
    check_fields,
    index_name,
    read_json_object,
)
from hopindex.api.http.routing import Guard, Route, context
from hopindex.api.method_options import check_option_names, option_schema
from hopindex.api.service import Hopindex
from hopindex.core.errors import InvalidInputError
from hopindex.methods.base import (
    MAX_CANDIDATES,
    MAX_K,
    FusionMode,
    ParamValue,
    QueryOptions,
    QueryResult,
    Retrieval,
)
from hopindex.methods.registry import check_fit, default_query, query_method_names

QUERY_FIELDS = ("question", "method", "k", "retrieval", "fusion", "candidates",
                "dense_weight", "keyword_weight", "options")
MAX_METHOD_CHARS = 64
DEFAULT_K = 5
# A fixed bound, not HOPINDEX_API_MAX_BODY_BYTES (that one is for documents): a query
# is a question of at most HOPINDEX_API_MAX_QUERY_CHARS and a few small fields.
MAX_QUERY_BODY_BYTES = MAX_JSON_BODY_BYTES
# Where the methods name a bad parameter; the API calls them options.
_PARAMS_WHERE = "params."


def query_options(body: dict[str, Any]) -> QueryOptions:
    """QueryOptions from a query body; ``options`` become the method-specific
    ``QueryOptions.params`` (the method that reads them checks them)."""
    options = body.get("options")
    if options is not None and not isinstance(options, dict):
        raise bad_request("field 'options' must be an object of method-specific options",
                          field="options")
    for name, value in (options or {}).items():
        if not name:
            raise bad_request("option names must be non-empty", field="options")
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


def check_options(params: Mapping[str, ParamValue], method: str) -> None:
    """400 naming ``options.NAME`` for an option ``method`` does not take (the rule
    every door obeys) or of the wrong JSON type (this door's own: JSON carries types)."""
    try:
        check_option_names(method, params)
    except InvalidInputError as exc:
        raise _as_option_error(exc) from None
    properties = option_schema(method).get("properties", {})
    for name, value in params.items():
        # JSON carries types: a number option is a JSON number, a choice a string (the
        # CLI's --param KEY=VALUE strings are converted by the method, not here).
        wants_text = properties[name]["type"] == "string"
        if isinstance(value, str) != wants_text or isinstance(value, bool):
            raise bad_request(f"option {name!r} must be "
                              f"{'a string' if wants_text else 'a number'}, got {value!r}",
                              field=f"options.{name}")


def answer(service: Hopindex, index: str, question: str, method: str | None,
           options: QueryOptions) -> QueryResult:
    """The query, its options checked against the method that will run (the index
    method's default query method when none is named) once that method is known to
    read the index: one that cannot is a 400 naming those that can."""
    if options.params:
        info = service.backends.state.get_index(index)
        if info is not None:  # else service.query says the index does not exist
            chosen = method or default_query(info.method)
            check_fit(chosen, index, info.method)
            check_options(options.params, chosen)
    try:
        return service.query(index, question, method, options)
    except InvalidInputError as exc:
        if not exc.where.startswith(_PARAMS_WHERE):
            raise
        field = "options." + exc.where.removeprefix(_PARAMS_WHERE)
        raise bad_request(f"{field}: {str(exc).removeprefix(f'{exc.where}: ')}",
                          field=field) from None


def _as_option_error(exc: InvalidInputError) -> ApiError:
    """The method's ``params.NAME`` error as the API names it: ``options.NAME``."""
    return bad_request(str(exc).removeprefix(f"{exc.where}: "),
                       field="options." + exc.where.removeprefix(_PARAMS_WHERE))


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


async def query(request: web.Request) -> web.Response:
    ctx = context(request)
    index = index_name(request.match_info["name"], field="name")
    body = await read_query_body(request)
    check_fields(body, QUERY_FIELDS, required=("question",))
    question = body_string(body, "question", max_chars=ctx.settings.api_max_query_chars,
                           required=True, limit_name=MAX_QUERY_CHARS_VARIABLE)
    method = body_string(body, "method", max_chars=MAX_METHOD_CHARS)
    if method is not None and method not in (known := query_method_names()):
        raise bad_request(f"unknown method {method!r}; known: {', '.join(known)}",
                          field="method")
    options = query_options(body)
    assert question is not None  # required=True
    result = await ctx.blocking.run(answer, ctx.service, index, question, method, options)
    return web.json_response(result.as_dict())


ROUTES = [Route("POST", "/v1/indexes/{name}/query", query, Guard.READ)]
