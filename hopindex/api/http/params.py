"""Reading and checking what a request carries: query parameters, JSON bodies, limits.

Every rejection names the parameter or body field, so the 400 says what to fix.
The bounds here are the ones the OpenAPI spec publishes (it is built from the
same settings and constants).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from hopindex.api.client.local import LocalClient
from hopindex.api.client.refusals import refusal_of
from hopindex.api.http.errors import ApiError, bad_request
from hopindex.api.http.routing import context
from hopindex.core.budget import (
    MAX_COST,
    MAX_LLM_TOKENS,
    BudgetLimits,
    parse_max_cost,
    parse_max_tokens,
)
from hopindex.core.errors import InvalidInputError
from hopindex.core.ids import validate_index_name
from hopindex.core.json_input import (
    MAX_JSON_DEPTH,
    MAX_JSON_NUMBER_CHARS,
    JsonInputError,
    JsonLimits,
    JsonSyntaxError,
    decode_json_bytes,
    parse_json,
    shown_literal,
    shown_number,
)
from hopindex.core.llm_modes import LLM_MODE, parse_llm_mode
from hopindex.core.settings import LlmMode

E = TypeVar("E", bound=enum.Enum)
M = TypeVar("M", bound=BaseModel)

# JSON bodies other than documents (queries, index and webhook creation) are small.
MAX_JSON_BODY_BYTES = 1_000_000
JSON_MEDIA_TYPES = ("application/json",)
# No string or key in such a body is longer, but for a question (up to
# HOPINDEX_API_MAX_QUERY_CHARS): no other field takes more (a webhook URL 2,048, a
# document id 1,000), and a string no field reads must not be kept or echoed at any length.
MAX_BODY_STRING_CHARS = 2_048
MAX_QUERY_CHARS_VARIABLE = "HOPINDEX_API_MAX_QUERY_CHARS"
MAX_BODY_BYTES_VARIABLE = "HOPINDEX_API_MAX_BODY_BYTES"


def too_large(limit_bytes: int, what: str = "request body", *,
              setting: str | None = None) -> ApiError:
    """413 naming the limit, and the variable that sets it when one does (``setting``);
    the limit of a small JSON body is fixed, and says so."""
    source = setting or "fixed"
    return ApiError(413, "body_too_large", f"{what} is over the limit of {limit_bytes:,} bytes "
                                           f"({source})",
                    details={"limit_bytes": limit_bytes})


def check_declared_length(request: web.Request, limit_bytes: int, *,
                          setting: str | None = None) -> None:
    """413 at once when Content-Length already says the body is too large."""
    if request.content_length is not None and request.content_length > limit_bytes:
        raise too_large(limit_bytes, setting=setting)


async def read_json_object(request: web.Request,
                           limit_bytes: int = MAX_JSON_BODY_BYTES) -> dict[str, Any]:
    """The body as a JSON object within the bounded parser's limits (body_json_limits):
    415 for another media type, 413 past ``limit_bytes``, 400 naming the line of a
    syntax error or the field (``question``, ``options.x``) of a value past a limit."""
    if request.content_type not in JSON_MEDIA_TYPES:
        raise ApiError(415, "unsupported_media_type",
                       f"send the body as application/json, not {request.content_type!r}")
    check_declared_length(request, limit_bytes)
    data = bytearray()
    async for chunk in request.content.iter_chunked(64 * 1024):
        data.extend(chunk)
        if len(data) > limit_bytes:
            raise too_large(limit_bytes)
    try:
        value = parse_json(decode_json_bytes(bytes(data)),
                           body_json_limits(context(request).settings.api_max_query_chars))
    except JsonSyntaxError as exc:
        raise ApiError(400, "invalid_json", f"body is not valid JSON: {exc.message} (line "
                                            f"{exc.line}, column {exc.column})",
                       line=exc.line, details={"column": exc.column}) from None
    except JsonInputError as exc:
        if not exc.path:  # the body as a whole: not UTF-8, or a key at the top level
            raise ApiError(400, "invalid_json", f"body {exc.reason}", field="body") from None
        raise ApiError(400, "invalid_input", exc.described, field=exc.path,
                       line=exc.line) from None
    if not isinstance(value, dict):
        raise bad_request("body must be a JSON object", field="body")
    return value


def body_json_limits(max_query_chars: int) -> JsonLimits:
    """The parser's limits for a JSON request body: room for the longest question, whose
    setting a string past the limit is told of when it sets the limit."""
    from_setting = max_query_chars > MAX_BODY_STRING_CHARS
    return JsonLimits(max_depth=MAX_JSON_DEPTH, max_number_chars=MAX_JSON_NUMBER_CHARS,
                      max_string_chars=max(MAX_BODY_STRING_CHARS, max_query_chars),
                      string_limit_name=MAX_QUERY_CHARS_VARIABLE if from_setting else "")


def validated(model: type[M], body: dict[str, Any], **context: Any) -> M:
    """``body`` as ``model`` (api/client/requests.py), or the 4xx that names the first
    thing wrong with it; ``context``: the limits that settings give (the model's
    validation context)."""
    try:
        return model.model_validate(body, context=context)
    except ValidationError as exc:
        raise refusal(model, exc.errors(include_url=False)) from None


def refusal(model: type[BaseModel], errors: Sequence[ErrorDetails]) -> ApiError:
    """The answer for pydantic's ``errors`` about a body read as ``model``
    (api/client/refusals.py words it, for every door)."""
    found = refusal_of(model, errors)
    return ApiError(found.status, found.code, found.message, field=found.field,
                    details=found.details)


def _enum_value(value: object, name: str, kind: type[E]) -> E:
    return kind(_choice(value, name, [m.value for m in kind]))


def _choice(value: object, name: str, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise bad_request(f"{name!r} must be one of {', '.join(choices)}, got {value!r}",
                          field=name)
    return value


def query_choice(request: web.Request, name: str, choices: Sequence[str]) -> str | None:
    """A query parameter that must be one of ``choices``; None when it is not given."""
    if name not in request.query:
        return None
    return _choice(request.query[name], name, choices)


def query_enum(request: web.Request, name: str, kind: type[E], default: E) -> E:
    if name not in request.query:
        return default
    return _enum_value(request.query[name], name, kind)


def query_int(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:  # not a number, or more digits than Python converts
        raise bad_request(f"query parameter {name!r} must be an integer between {low} and "
                          f"{high}, got {shown_literal(raw)!r}", field=name) from None
    if not low <= value <= high:
        raise bad_request(f"query parameter {name!r} must be between {low} and {high}, "
                          f"got {shown_number(value)}", field=name)
    return value


def query_string(request: web.Request, name: str) -> str | None:
    raw = request.query.get(name)
    if raw is not None and not raw:
        raise bad_request(f"query parameter {name!r} must not be empty", field=name)
    return raw


def index_name(value: str, field: str = "index") -> str:
    """``value`` checked against the one index-name pattern (hopindex.core.ids)."""
    try:
        return validate_index_name(value)
    except InvalidInputError as exc:
        raise bad_request(str(exc), field=field) from None


# A budget's limits as the spec publishes them: a whole number of tokens and a number
# (JSON's syntax) of money, neither negative. Checked here, before ``core/budget.py``'s
# parsers, which also take the forms a command line gives ("1e3", " 5").
_TOKENS_TEXT = re.compile(r"-?[0-9]+")
_COST_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
BUDGET_FIELDS = (MAX_LLM_TOKENS, MAX_COST)


def query_limits(request: web.Request) -> BudgetLimits:
    """The ``max_llm_tokens`` and ``max_cost`` query parameters (each optional); a 400
    naming the parameter for anything but a number of 0 or more."""
    tokens, cost = (request.query.get(name) for name in BUDGET_FIELDS)
    if tokens is not None and not _TOKENS_TEXT.fullmatch(tokens):
        raise bad_request(f"query parameter {MAX_LLM_TOKENS!r} must be a whole number of 0 "
                          f"or more, got {shown_literal(tokens)!r}", field=MAX_LLM_TOKENS)
    if cost is not None and not _COST_TEXT.fullmatch(cost):
        raise bad_request(f"query parameter {MAX_COST!r} must be a number of 0 or more, got "
                          f"{shown_literal(cost)!r}", field=MAX_COST)
    try:
        return BudgetLimits(max_llm_tokens=parse_max_tokens(_whole(tokens), MAX_LLM_TOKENS),
                            max_cost=parse_max_cost(cost, MAX_COST))
    except InvalidInputError as exc:
        raise bad_request(str(exc), field=exc.where) from None


def _whole(text: str | None) -> int | None:
    # An int, not the text: core's parser reads text through a float, which rounds
    # counts past 2**53.
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:  # more digits than Python converts
        raise bad_request(f"query parameter {MAX_LLM_TOKENS!r} is too long",
                          field=MAX_LLM_TOKENS) from None


def query_llm_mode(request: web.Request) -> LlmMode | None:
    """The ``llm_mode`` query parameter (optional): a 400 naming it and the modes there
    are for anything else, in the words of every other door (core/llm_modes.py)."""
    try:
        return parse_llm_mode(request.query.get(LLM_MODE))
    except InvalidInputError as exc:
        raise bad_request(str(exc), field=exc.where) from None


def require_prices(client: LocalClient, limits: BudgetLimits) -> None:
    """422 naming ``max_cost`` when a cost limit is given to a server with no LLM prices
    (nothing could count against it): what the server is not set up for, as an LLM
    method without a model is. Asked before a body is read or a job started."""
    try:
        client.check_limits(limits)
    except InvalidInputError as exc:
        raise ApiError(422, "not_configured", str(exc), field=exc.where or None) from None
