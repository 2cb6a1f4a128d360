"""The two middlewares every request passes: answering (request id, timeout, errors as
JSON, one log event) and authentication (bearer key, failure rate, access, index scope)."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from contextlib import nullcontext
from dataclasses import dataclass, field

import structlog
from aiohttp import web

from hopindex.api.access import LOCAL_PRINCIPAL, Principal
from hopindex.api.blocking import BlockingRunner
from hopindex.api.error_view import plain_traceback
from hopindex.api.http.errors import (
    ApiError,
    bad_request,
    error_response,
    from_hopindex_error,
    internal_error,
)
from hopindex.api.http.event_tokens import TOKEN_PARAM, Refusal
from hopindex.api.http.keys import Pending
from hopindex.api.http.ratelimit import (
    FailureLimiter,
    FailurePause,
    client_of,
    retry_after_header,
)
from hopindex.api.http.routing import (
    PRINCIPAL_KEY,
    REQUEST_ID_HEADER,
    REQUEST_ID_KEY,
    Credential,
    Handler,
    Route,
    RouteKind,
    context,
    require_access,
    require_index_scope,
    route_of,
)
from hopindex.core.errors import HopindexError
from hopindex.core.logging import get_logger
from hopindex.core.tracing import NO_SPAN, set_error
from hopindex.core.tracing.spans import server_span

log = get_logger(__name__)

_CLIENT_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
# aiohttp's own answers (no route, wrong method, unreadable request) as stable codes.
_HTTP_CODES = {400: "invalid_request", 404: "not_found", 405: "method_not_allowed",
               413: "body_too_large", 415: "unsupported_media_type"}


@dataclass(slots=True)
class KeyChecks:
    """What authentication keeps between requests: each client's failure budget, the
    pause before a 429, and the one thread scrypt checks run on, so however many arrive
    they take one core at most and never a thread the queries need."""

    failures: FailureLimiter
    slow: BlockingRunner
    pause: FailurePause = field(default_factory=FailurePause)


KEY_CHECKS = web.AppKey("hopindex_key_checks", KeyChecks)


def _request_id(request: web.Request) -> str:
    given = request.headers.get(REQUEST_ID_HEADER, "")
    return given if _CLIENT_REQUEST_ID.fullmatch(given) else uuid.uuid4().hex


def _allowed(request: web.Request, allow: str) -> str:
    """The methods of the request's path as the spec matches it (a fixed path before a
    templated one): ``/v1/indexes/import``'s own, without those of ``/v1/indexes/{name}``,
    which it also fits and aiohttp adds in."""
    fixed = sorted(method for method, path in context(request).routes if path == request.path)
    return ",".join(fixed) if fixed else allow


def _from_http_exception(request: web.Request, exc: web.HTTPException) -> ApiError:
    headers = {"Allow": _allowed(request, exc.headers["Allow"])} if "Allow" in exc.headers else {}
    message = exc.text if exc.text and not exc.text.startswith(f"{exc.status}:") else exc.reason
    if exc.status == 404 and message == exc.reason:  # the router's: no route matched
        message = "no such route; /v1/openapi.json lists them"
    elif exc.status == 405 and message == exc.reason:
        message = (f"{request.method} is not allowed here; allowed: "
                   f"{headers.get('Allow') or 'none'}")
    return ApiError(exc.status, _HTTP_CODES.get(exc.status, "http_error"), message,
                    headers=headers)


UNTRACED_ROUTES = frozenset({"/healthz", "/metrics"})


@web.middleware
async def answer_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Request id, request timeout, every error as JSON, one ``http_request`` log event."""
    request_id = _request_id(request)
    request[REQUEST_ID_KEY] = request_id
    started = time.perf_counter()
    route = route_of(request)
    status = 500
    template = route.path if route is not None else "unmatched"
    # Probes and scrapes come every few seconds: as traces they would bury the requests.
    tracing = (nullcontext(NO_SPAN) if template in UNTRACED_ROUTES else
               server_span(request.method, template, request.path, request.headers))
    with structlog.contextvars.bound_contextvars(request_id=request_id), tracing as traced:
        try:
            if route is not None and route.kind is RouteKind.STREAM:
                response = await handler(request)
            else:
                async with asyncio.timeout(context(request).settings.api_request_timeout_s):
                    response = await handler(request)
        except ApiError as exc:
            response = error_response(exc, request_id)
        except HopindexError as exc:
            mapped = from_hopindex_error(exc)
            if mapped is None:
                log.error("http_request_failed", error_type=type(exc).__name__,
                          error=str(exc), traceback=plain_traceback(exc))
                mapped = internal_error()
            response = error_response(mapped, request_id)
        except web.HTTPException as exc:
            response = error_response(_from_http_exception(request, exc), request_id)
        except TimeoutError:
            response = error_response(ApiError(
                504, "timeout", "the request took longer than "
                f"{context(request).settings.api_request_timeout_s:g}s "
                "(HOPINDEX_API_REQUEST_TIMEOUT_S)"), request_id)
        except asyncio.CancelledError:
            raise  # the client went away or the server is stopping
        except Exception as exc:
            log.error("http_request_failed", error_type=type(exc).__name__,
                      traceback=plain_traceback(exc))
            response = error_response(internal_error(), request_id)
        status = response.status
        if traced.is_recording():
            traced.set_attribute("http.response.status_code", status)
            traced.set_attribute("hopindex.request_id", request_id)
            if status >= 500:  # the server's fault, by HTTP's classes
                set_error(traced, str(status))
        if not response.prepared:
            response.headers[REQUEST_ID_HEADER] = request_id
        who = request.get(PRINCIPAL_KEY)
        log.info("http_request", method=request.method, path=request.path, status=status,
                 duration_ms=round((time.perf_counter() - started) * 1000, 2),
                 key=who.name if who else None)
    return response


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, credentials = header.partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip()


def _takes_token(route: Route) -> bool:
    return route.credential is Credential.API_KEY_OR_EVENT_TOKEN


def _check_query(request: web.Request, route: Route) -> None:
    taken = (*route.query, TOKEN_PARAM) if _takes_token(route) else route.query
    for name in request.query:
        if name not in taken:
            known = ", ".join(taken) or "none"
            raise bad_request(f"unknown query parameter {name!r}; known: {known}", field=name)
        if len(request.query.getall(name)) > 1:
            raise bad_request(f"query parameter {name!r} is given more than once", field=name)


async def _too_many_failures(checks: KeyChecks, wait_s: float) -> ApiError:
    await checks.pause.pause(wait_s)
    return ApiError(429, "too_many_failures", "too many requests without a valid API key "
                    f"from this address; retry in {retry_after_header(wait_s)}s",
                    headers={"Retry-After": retry_after_header(wait_s)})


async def _authenticate(request: web.Request) -> Principal:
    """The key's principal. A key that is not plainly right spends one of its client's
    failure tokens first (429 when none is left); a right one gets it back."""
    keys, checks = context(request).keys, request.app[KEY_CHECKS]
    presented = _bearer(request)
    found = keys.lookup(presented) if presented is not None else None
    if isinstance(found, Principal):
        return found
    client = client_of(request.remote)
    wait_s = checks.failures.take(client)
    if wait_s is None and found is Pending.SLOW_CHECK and presented is not None:
        found = await checks.slow.run(keys.verify_slow, presented)
    missing = presented is None
    # Not kept in this frame past here: a traceback must not carry it.
    del presented
    if wait_s is not None:
        raise await _too_many_failures(checks, wait_s)
    if missing:
        hint = (f"; ?{TOKEN_PARAM}= (an event token) is taken by GET /v1/events only"
                if TOKEN_PARAM in request.query else "")
        raise ApiError(401, "unauthenticated",
                       f"send an API key: Authorization: Bearer KEY{hint}")
    if not isinstance(found, Principal):
        raise ApiError(401, "unauthenticated", "the API key is not valid")
    checks.failures.give_back(client)
    return found


async def _authenticate_token(request: web.Request) -> Principal:
    """The read-only, one-index principal of an event token (event_tokens.py). A token
    that is refused spends a failure token, as a wrong key does."""
    given = request.query.getall(TOKEN_PARAM)
    if len(given) > 1:
        raise bad_request(f"query parameter {TOKEN_PARAM!r} is given more than once",
                          field=TOKEN_PARAM)
    found = context(request).tokens.verify(given[0], now=time.time())
    if isinstance(found, Principal):
        return found
    del given  # a traceback must not carry it
    checks = request.app[KEY_CHECKS]
    client = client_of(request.remote)
    wait_s = checks.failures.take(client)
    log.info("event_token_refused", reason=found.value)
    if wait_s is not None:
        raise await _too_many_failures(checks, wait_s)
    message = ("the event token expired; ask POST /v1/indexes/{name}/events/token for a new "
               "one" if found is Refusal.EXPIRED else "the event token is not valid")
    raise ApiError(401, "unauthenticated", message, field=TOKEN_PARAM)


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """401 without a valid key (or event token, on the routes that take one), 403 when
    the key's access or indexes do not cover the route (the ``{name}`` in its path;
    handlers check indexes named elsewhere), then 400 for query parameters the route
    does not take."""
    route = route_of(request)
    if route is None:
        return await handler(request)  # aiohttp answers 404 or 405
    needed = route.access_for(request)
    if needed is None:
        _check_query(request, route)
        return await handler(request)
    ctx = context(request)
    # A key, when sent, decides (pages cannot send one, programs need no token).
    if _takes_token(route) and TOKEN_PARAM in request.query and _bearer(request) is None:
        request[PRINCIPAL_KEY] = await _authenticate_token(request)
    else:
        request[PRINCIPAL_KEY] = (await _authenticate(request) if ctx.keys.configured
                                  else LOCAL_PRINCIPAL)
    require_access(request, needed)
    if "name" in request.match_info:
        require_index_scope(request, request.match_info["name"])
    _check_query(request, route)
    return await handler(request)
