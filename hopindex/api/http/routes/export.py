"""``GET /v1/indexes/{name}/export``: the index's export file (api/transfer.py), streamed
as the records are read, so ``hopindex export --api URL`` writes what a local export
writes and the server never holds a whole index in memory."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from aiohttp import web

from hopindex.api import transfer_format as fmt
from hopindex.api.http.params import index_name
from hopindex.api.http.routing import (
    REQUEST_ID_HEADER,
    REQUEST_ID_KEY,
    Guard,
    Route,
    RouteKind,
    context,
)
from hopindex.api.transfer import IndexExport
from hopindex.core.logging import get_logger

log = get_logger(__name__)

EXPORT_TYPE = "application/x-ndjson"
# Records read per trip to a blocking thread: a trip costs far more than a record's
# JSON, and a unit's vector makes its line a few kilobytes, so a chunk stays small.
CHUNK_RECORDS = 64


def _chunk(records: Iterator[dict[str, Any]]) -> bytes:
    return "".join(fmt.record_line(r) for r in itertools.islice(records, CHUNK_RECORDS)).encode()


async def export_index(request: web.Request) -> web.StreamResponse:
    """200 with the records as JSON lines; a missing index (404) or one with a running
    job (409) is refused before the first byte."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    export = await ctx.blocking.run(IndexExport, ctx.service.backends, name)
    records = export.records()
    response = web.StreamResponse(headers={
        "Content-Type": EXPORT_TYPE,
        "Content-Disposition": f'attachment; filename="{name}.jsonl"',
        REQUEST_ID_HEADER: request[REQUEST_ID_KEY]})
    await response.prepare(request)
    try:
        while chunk := await ctx.blocking.run(_chunk, records):
            await response.write(chunk)
    except ConnectionResetError:
        log.info("export_client_gone", index=name)
        return response
    except Exception as exc:
        # The status is sent: the connection is dropped without the end of the body, and
        # the file without its end record, so the client cannot take it as whole.
        log.error("export_failed", index=name, error=f"{type(exc).__name__}: {exc}")
        if request.transport is not None:
            request.transport.close()
        return response
    await response.write_eof()
    log.info("index_exported", **export.summary.as_dict())
    return response


ROUTES = [
    Route("GET", "/v1/indexes/{name}/export", export_index, Guard.READ, RouteKind.STREAM),
]
