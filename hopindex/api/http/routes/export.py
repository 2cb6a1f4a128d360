"""``GET /v1/indexes/{name}/export``: the index's export file (api/transfer.py), streamed
as the records are read, so ``hopindex export --api URL`` writes what a local export
writes and the server never holds a whole index in memory.

``POST /v1/indexes/import``: such a file as the body, loaded into a new index of the
name its header carries (201 with the counts); an index of that name already here is
a 409, and a key limited to some indexes may import only those."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from aiohttp import web

from hopindex.api import transfer_format as fmt
from hopindex.api.client.local import LocalClient
from hopindex.api.client.models import TransferCounts
from hopindex.api.http.errors import ApiError, bad_request
from hopindex.api.http.params import index_name
from hopindex.api.http.routing import (
    REQUEST_ID_HEADER,
    REQUEST_ID_KEY,
    Guard,
    Route,
    RouteKind,
    context,
    require_index_scope,
)
from hopindex.api.http.uploads import NDJSON_TYPES, locate, save_body
from hopindex.core.errors import InvalidInputError
from hopindex.core.logging import get_logger

log = get_logger(__name__)

EXPORT_TYPE = "application/x-ndjson"
IMPORT_PATH = "/v1/indexes/import"
# The body's name in errors (``body.jsonl:3``), as an ingest's body is named.
BODY_FILE = "body.jsonl"
# Records read per trip to a blocking thread: a trip costs far more than a record's
# JSON, and a unit's vector makes its line a few kilobytes, so a chunk stays small.
CHUNK_RECORDS = 64


def _chunk(records: Iterator[dict[str, Any]]) -> bytes:
    return "".join(fmt.record_line(r) for r in itertools.islice(records, CHUNK_RECORDS)).encode()


def _noting_end(records: Iterator[dict[str, Any]], ends: list[dict[str, Any]]
                ) -> Iterator[dict[str, Any]]:
    """``records``, keeping the end record (its counts are what the export held)."""
    for record in records:
        if record.get("type") == "end":
            ends.append(record)
        yield record


async def export_index(request: web.Request) -> web.StreamResponse:
    """200 with the records as JSON lines; a missing index (404) or one with a running
    job (409) is refused before the first byte."""
    ctx = context(request)
    name = index_name(request.match_info["name"], field="name")
    ends: list[dict[str, Any]] = []
    records = _noting_end(await ctx.blocking.run(ctx.client.indexes.export_records, name),
                          ends)
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
    log.info("index_exported", **(ends[-1]["counts"] if ends else {"index": name}))
    return response


def _import_file(client: LocalClient, folder: Path, check_scope: Callable[[str], None]
                 ) -> TransferCounts:
    """Import ``folder``'s body file, then remove the folder: here, on the thread doing
    it, so a request that times out does not take the file from under the import."""
    path = folder / BODY_FILE
    prefix = f"{folder}/"
    try:
        check_scope(client.indexes.export_name(path))
        return client.indexes.import_index(path)
    except UnicodeDecodeError:
        raise bad_request("the body is not UTF-8 text; send the export file as written",
                          field="body") from None
    except InvalidInputError as exc:
        if not exc.where.startswith(prefix):
            raise
        # Named by the body's line, not by the temporary file the server read it from.
        where = exc.where.removeprefix(prefix)
        found = locate(where)
        raise ApiError(400, exc.code, str(exc).replace(prefix, ""), field="body",
                       line=found.get("line"), details={"file": found.get("file", where)}
                       ) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def import_index(request: web.Request) -> web.Response:
    """201 with what was loaded; 400 naming the line of a malformed file, 409 when the
    index is here already, 413 past HOPINDEX_API_MAX_BODY_BYTES."""
    ctx = context(request)
    if request.content_type not in NDJSON_TYPES:
        raise ApiError(415, "unsupported_media_type",
                       f"send the export file as {EXPORT_TYPE}, not {request.content_type!r}")
    folder = Path(tempfile.mkdtemp(prefix="hopindex-import-"))
    try:
        if not await save_body(request, folder / BODY_FILE, ctx.settings.api_max_body_bytes):
            raise bad_request("the body is empty; send an export file", field="body")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    # The index is named inside the body: a key limited to some indexes is checked
    # against it before anything is written.
    counts = await ctx.blocking.run(_import_file, ctx.client, folder,
                                    lambda name: require_index_scope(request, name))
    return web.json_response(counts.as_dict(), status=201,
                             headers={"Location": f"/v1/indexes/{counts.index}"})


ROUTES = [
    Route("GET", "/v1/indexes/{name}/export", export_index, Guard.READ, RouteKind.STREAM),
    Route("POST", IMPORT_PATH, import_index, Guard.WRITE),
]
