"""``GET /v1/events``: the event log as server-sent events, resumable by id; and the
event tokens a page's ``EventSource`` passes in its place of a key (event_tokens.py)."""

from __future__ import annotations

import re
import time

from aiohttp import web

from hopindex.api.http.errors import ApiError, bad_request
from hopindex.api.http.params import index_name, query_enum, query_string
from hopindex.api.http.routing import (
    Credential,
    Guard,
    Route,
    RouteKind,
    context,
    principal,
    require_index_scope,
)
from hopindex.api.http.sse import StreamMode, serve_stream
from hopindex.core.errors import EventsGoneError, InvalidInputError

MAX_EVENT_ID_CHARS = 64
# The logs' ids: SQLite's are integers, a Redis stream's MILLISECONDS-SEQUENCE.
EVENT_ID_PATTERN = r"^[0-9]{1,20}(-[0-9]{1,20})?$"
_EVENT_ID = re.compile(EVENT_ID_PATTERN)
LAST_EVENT_ID = "Last-Event-ID"


def _cursor(request: web.Request) -> tuple[str | None, str]:
    """The cursor and where it came from: ``Last-Event-ID`` (a reconnecting client's)
    wins over ``from`` (the first request's). Both are checked when both are sent:
    a malformed one is refused even when the other wins."""
    header = request.headers.get(LAST_EVENT_ID)
    given = query_string(request, "from")
    for field, cursor in ((LAST_EVENT_ID, header), ("from", given)):
        if cursor is not None and not _EVENT_ID.fullmatch(cursor):
            raise bad_request(f"malformed event id {cursor[:MAX_EVENT_ID_CHARS]!r}: ids look "
                              "like 42 or 1732186800000-0", field=field)
    return (header, LAST_EVENT_ID) if header is not None else (given, "from")


async def stream_events(request: web.Request) -> web.StreamResponse:
    ctx = context(request)
    raw_index = query_string(request, "index")
    index = index_name(raw_index) if raw_index is not None else None
    who = principal(request)
    if index is not None:
        require_index_scope(request, index)
    elif who.indexes is not None:
        raise ApiError(403, "forbidden", f"this API key ({who.name}) covers only "
                       f"{who.index_label}: pass index=NAME", field="index")
    mode = query_enum(request, "mode", StreamMode, StreamMode.FOLLOW)
    cursor, field = _cursor(request)
    try:
        return await serve_stream(ctx, request, index=index, cursor=cursor, mode=mode)
    except InvalidInputError as exc:
        # The id is well formed, so the log refused it for never having issued it.
        raise ApiError(404, "unknown_event_id", str(exc), field=field) from None
    except EventsGoneError as exc:
        # A 410 naming where the id came from: the query or a reconnect's header.
        raise EventsGoneError(exc.after_id, exc.oldest_id, exc.retention,
                              where=field) from None


async def issue_event_token(request: web.Request) -> web.Response:
    """A read-only token for this index's events, for ``?token=`` on ``/v1/events``. The
    index need not exist yet: a page may watch the ingest that creates it."""
    name = index_name(request.match_info["name"], field="name")
    issued = context(request).tokens.issue(principal(request), name, now=time.time())
    # A credential: no cache keeps it.
    return web.json_response(issued.as_dict(), headers={"Cache-Control": "no-store"})


ROUTES = [
    Route("GET", "/v1/events", stream_events, Guard.READ, RouteKind.STREAM,
          query=("index", "from", "mode"), credential=Credential.API_KEY_OR_EVENT_TOKEN),
    Route("POST", "/v1/indexes/{name}/events/token", issue_event_token, Guard.READ),
]
