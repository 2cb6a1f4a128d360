"""An ingest request's body in, reader documents and errors out.

The body is streamed to a private temporary folder under the size limit and
read there by the same readers the CLI uses (hopindex.readers), so the API
accepts exactly the formats and reports exactly the errors the CLI does:

- ``application/json``: a list of records, one record, or a HotpotQA corpus object;
- ``application/x-ndjson`` (or ``application/jsonl``): one record per line;
- ``multipart/form-data``: files in parts named ``file``, read by their suffix
  (``.jsonl``, ``.json``, either ``.gz``, ``.txt``, ``.md``); a file name may hold
  folders (``notes/a.md``), which become part of a text document's id, as with the CLI.

Errors name the body's file and line: ``body.jsonl:3``, ``body.json[2]:text``.
"""

from __future__ import annotations

import enum
import re
import tempfile
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import HttpProcessingError

from hopindex.api.blocking import BlockingRunner
from hopindex.api.http.errors import ApiError, bad_request
from hopindex.api.http.params import (
    MAX_BODY_BYTES_VARIABLE,
    check_declared_length,
    too_large,
)
from hopindex.readers import ReadError, ReadOptions, ReadResult, accepted_suffixes, read_paths

CHUNK_BYTES = 64 * 1024
MAX_LISTED_ERRORS = 100
NDJSON_TYPES = ("application/x-ndjson", "application/jsonl", "application/x-jsonlines",
                "application/jsonlines")
JSON_TYPE = "application/json"
MULTIPART_TYPE = "multipart/form-data"
FILE_FIELD = "file"
# Where an error sits in the body: file, then line, record index or title, then field.
# A field is a path into the record: ``text``, ``metadata.author``, ``tags[1]``,
# ``metadata["first name"]`` for a key that is not a plain name, ``[0]`` into a line
# that is an array (hopindex.core.json_input).
_QUOTED_KEY = r'\["(?:[^"\\]|\\.)*"\]'
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_FIELD = rf"(?:{_NAME}|{_QUOTED_KEY}|\[\d+\])(?:\.{_NAME}|\[\d+\]|{_QUOTED_KEY})*"
_ORIGIN = re.compile(r"^(?P<file>[^:\[]+)(?::(?P<line>\d+))?(?:\[(?P<record>\d+)\])?"
                     rf"(?:\[(?P<key>\".*?\")\])?(?::(?P<field>{_FIELD}))?$")
_SAFE_PART = re.compile(r"^[^/\\:\[\]\x00-\x1f]+$")


class OnError(enum.StrEnum):
    REJECT = "reject"  # any bad record fails the whole request with a 400
    SKIP = "skip"  # bad records are listed on the job; the rest is ingested (like the CLI)


def locate(origin: str) -> dict[str, Any]:
    """The parts of a reader origin (``body.jsonl:3:text``) a program can act on."""
    match = _ORIGIN.fullmatch(origin)
    if match is None:
        return {}
    found: dict[str, Any] = {"file": match["file"]}
    for name in ("line", "record"):
        if match[name] is not None:
            found[name] = int(match[name])
    if match["field"] is not None:
        found["field"] = match["field"]
    return found


def rejection(errors: list[ReadError]) -> ApiError:
    """The 400 for a body with bad records: the first one in the message, all (up to
    MAX_LISTED_ERRORS) in ``errors``."""
    first = errors[0]
    where = locate(first.origin)
    listed = [{"where": e.origin, "message": e.reason, **locate(e.origin)}
              for e in errors[:MAX_LISTED_ERRORS]]
    details: dict[str, Any] = {"file": where.get("file", first.origin), "errors": listed,
                               "error_count": len(errors)}
    if "record" in where:
        details["record"] = where["record"]
    return ApiError(400, "invalid_document", str(first), field=where.get("field"),
                    line=where.get("line"), details=details)


def _safe_name(filename: str | None, number: int) -> PurePosixPath:
    if not filename:
        raise bad_request(f"multipart part {number} ({FILE_FIELD!r}) has no file name; it is "
                          "the documents' id, and its suffix picks the reader of records "
                          f"({', '.join(accepted_suffixes())})",
                          field=FILE_FIELD)
    path = PurePosixPath(filename.replace("\\", "/"))
    parts = path.parts
    if (path.is_absolute() or not parts or any(p in (".", "..") or p.startswith(".")
                                                  or not _SAFE_PART.fullmatch(p) for p in parts)):
        raise bad_request(f"file name {filename!r} is not a safe relative path (no '..', "
                          "hidden parts, ':', brackets or control characters)", field=FILE_FIELD)
    return path


class _Budget:
    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self.used = 0

    def take(self, size: int) -> None:
        self.used += size
        if self.used > self.limit_bytes:
            raise too_large(self.limit_bytes, setting=MAX_BODY_BYTES_VARIABLE)


async def _save_stream(request: web.Request, target: Path, budget: _Budget) -> None:
    with target.open("wb") as fh:
        async for chunk in request.content.iter_chunked(CHUNK_BYTES):
            budget.take(len(chunk))
            fh.write(chunk)


async def save_body(request: web.Request, target: Path, limit_bytes: int) -> int:
    """The raw body streamed into ``target``, its size returned; a 413 naming
    HOPINDEX_API_MAX_BODY_BYTES past ``limit_bytes`` (at once when Content-Length says
    so), as for an ingest's body."""
    check_declared_length(request, limit_bytes, setting=MAX_BODY_BYTES_VARIABLE)
    budget = _Budget(limit_bytes)
    await _save_stream(request, target, budget)
    return budget.used


async def _save_part(part: BodyPartReader, target: Path, budget: _Budget) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as fh:
        while chunk := await part.read_chunk(CHUNK_BYTES):
            budget.take(len(chunk))
            fh.write(chunk)


async def _save_multipart(request: web.Request, folder: Path, budget: _Budget) -> None:
    try:
        await _save_parts(request, folder, budget)
    except (AssertionError, ValueError, HttpProcessingError) as exc:
        # aiohttp's multipart reader says what is wrong with the framing this way; a
        # part's headers that are not headers are an HttpProcessingError (InvalidHeader).
        raise bad_request(f"malformed multipart body: {_framing_fault(exc)}",
                          field="body") from None


def _framing_fault(exc: Exception) -> str:
    if isinstance(exc, HttpProcessingError):
        return "a part's headers cannot be read"
    return str(exc)


async def _save_parts(request: web.Request, folder: Path, budget: _Budget) -> None:
    reader = await request.multipart()
    seen: set[PurePosixPath] = set()
    number = 0
    while True:
        part = await reader.next()
        if part is None:
            break
        number += 1
        if not isinstance(part, BodyPartReader) or part.name != FILE_FIELD:
            raise bad_request(f"multipart part {number} must be a file named {FILE_FIELD!r}",
                              field=str(getattr(part, "name", None) or FILE_FIELD))
        name = _safe_name(part.filename, number)
        if name in seen:
            raise bad_request(f"file {str(name)!r} is sent twice", field=FILE_FIELD)
        seen.add(name)
        await _save_part(part, folder.joinpath(*name.parts), budget)
    if not seen:
        raise bad_request(f"the multipart body holds no {FILE_FIELD!r} part", field=FILE_FIELD)


def _relabelled(result: ReadResult, prefix: str) -> ReadResult:
    """Origins relative to the upload folder: ``body.jsonl:3``, not a temporary path, in
    origins and in reasons that quote another record's origin (a duplicate id's)."""
    def strip(origin: str) -> str:
        return origin.removeprefix(prefix)

    return ReadResult(documents=[replace(d, origin=strip(d.origin)) for d in result.documents],
                      errors=[ReadError(strip(e.origin), e.reason.replace(prefix, ""))
                              for e in result.errors])


async def receive_documents(request: web.Request, blocking: BlockingRunner, *,
                            max_body_bytes: int, options: ReadOptions) -> ReadResult:
    """Read the ingest body into documents and per-record errors (none fatal here)."""
    media = request.content_type
    if media not in (JSON_TYPE, MULTIPART_TYPE, *NDJSON_TYPES):
        raise ApiError(415, "unsupported_media_type",
                       f"send documents as {JSON_TYPE}, application/x-ndjson or "
                       f"{MULTIPART_TYPE}, not {media!r}")
    check_declared_length(request, max_body_bytes, setting=MAX_BODY_BYTES_VARIABLE)
    budget = _Budget(max_body_bytes)
    with tempfile.TemporaryDirectory(prefix="hopindex-upload-") as tmp:
        folder = Path(tmp) / "upload"
        folder.mkdir()
        if media == MULTIPART_TYPE:
            await _save_multipart(request, folder, budget)
        else:
            name = "body.json" if media == JSON_TYPE else "body.jsonl"
            await _save_stream(request, folder / name, budget)
        if budget.used == 0:
            raise bad_request("the body is empty; send documents", field="body")
        result = await blocking.run(read_paths, [folder], options=options)
    return _relabelled(result, f"{folder}/")
