"""The test server's Files and Batch APIs, in OpenAI's shapes (the ``openai`` client's
``files`` and ``batches`` parse them).

Files: ``POST /v1/files`` (multipart: ``purpose=batch`` and a ``.jsonl`` file),
``GET /v1/files/{id}``, ``GET /v1/files/{id}/content``, ``DELETE /v1/files/{id}``.
Batches of ``/v1/chat/completions`` lines: ``POST /v1/batches``, ``GET /v1/batches``
(newest first, ``limit`` and ``after``), ``GET /v1/batches/{id}``,
``POST /v1/batches/{id}/cancel``. An unknown id is a 404 and the API key is checked as
on every route; batch lines do not count against the per-minute limits, draw no fault
and wait no latency (a provider queues them apart).

A batch moves only when it is read (retrieved, listed or cancelled), so a test sees
its states in order with no clock of its own:

- ``validating`` → on the first read the input file is validated as OpenAI does: a
  line that is not a JSON object, lacks ``custom_id``, ``method``, ``url`` or ``body``,
  repeats a custom_id, names another url than the batch's endpoint, another method
  than POST or another model than the lines before fails the batch (``failed``), each
  problem in ``errors.data`` with its line number. Otherwise each custom_id's
  submission is counted and the batch is ``in_progress``.
- ``in_progress`` → its lines are done evenly over ``batch_completion_s`` (line i of n
  at (i + 1) / n of it; 0: all on the read that validated it), each answered as a
  synchronous call with its body is (``OpenAiTestApi.batch_reply``: the same reply,
  style draw, usage, and a 400 where a refusing style refuses its response_format). A
  ``batch_fail_lines`` share of custom_ids, drawn by a hash of the seed and the id, is
  answered with a 500 on its first submission only. When the time is up the batch is
  ``completed`` (through ``finalizing``): the output file holds the 200 lines, the
  error file the others. Under ``batch_expire`` it is ``expired`` instead: the first
  n // 2 lines done, the rest in the error file as ``batch_expired``.
- ``cancel`` → ``cancelling``, then ``cancelled`` on the next read: the lines done stay
  in the output (and error) file, the rest are counted cancelled and are in neither.

``request_counts.failed`` counts lines answered with an error status; an expired or
cancelled line is in neither count. Everything is counted in ``LlmServerStats``
(``batches`` by ``BatchEvent``, ``submissions`` by custom_id).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from hopindex.testing.llm_batch_files import (
    COMPLETION_WINDOW,
    ENDPOINT,
    METADATA_LIMITS,
    SERVER_ERROR_MESSAGE,
    WINDOW_S,
    InputLine,
    StoredFile,
    batch_usage,
    checked_metadata,
    drawn_share,
    expired_line,
    jsonl,
    new_id,
    result_line,
    validate_input,
)
from hopindex.testing.llm_chat import error_body
from hopindex.testing.llm_limits import (
    BatchEvent,
    Endpoint,
    LlmServerConfig,
    Outcome,
    ServerCounters,
)
from hopindex.testing.rerank_api import Authorise

# What a batch line is answered with: a status and its JSON body.
BatchReply = Callable[[object], tuple[int, dict[str, Any]]]


class BatchState(enum.StrEnum):
    VALIDATING = "validating"
    FAILED = "failed"
    IN_PROGRESS = "in_progress"
    FINALIZING = "finalizing"
    COMPLETED = "completed"
    EXPIRED = "expired"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"


_ENDED = frozenset({BatchState.FAILED, BatchState.COMPLETED, BatchState.EXPIRED,
                    BatchState.CANCELLED})


class _NotFoundError(Exception):
    """An id the server does not hold: a 404."""


class _RefusedError(Exception):
    """A request the server refuses: a 400 (409 with ``status``)."""

    def __init__(self, message: str, param: str | None = None, status: int = 400) -> None:
        self.param, self.status = param, status
        super().__init__(message)


@dataclass(slots=True)
class _Batch:
    """One batch's record, changed as it moves on."""

    id: str
    input_file: StoredFile
    metadata: dict[str, str] | None
    created_at: int
    state: BatchState = BatchState.VALIDATING
    lines: list[InputLine] = field(default_factory=list)
    failing: frozenset[str] = frozenset()  # custom_ids answered with the injected 500
    started: float = 0.0  # time.monotonic() when it went in_progress
    done: list[dict[str, Any]] = field(default_factory=list)  # result lines, in order
    errors: list[dict[str, Any]] = field(default_factory=list)
    times: dict[str, int] = field(default_factory=dict)  # "in_progress_at" and the like
    model: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None


class BatchTestApi:
    """The Files and Batch routes over the server's key check, counters and the
    synchronous chat reply (``OpenAiTestApi._unauthorised`` and ``batch_reply``)."""

    # OpenAI takes input files of up to 200 MB; aiohttp's default body limit is 1 MiB.
    MAX_UPLOAD_BYTES = 200 * 1024 * 1024

    def __init__(self, config: LlmServerConfig, counters: ServerCounters,
                 authorise: Authorise, reply: BatchReply) -> None:
        self._config = config
        self._counters = counters
        self._authorise = authorise
        self._reply = reply
        self._files: dict[str, StoredFile] = {}
        self._batches: dict[str, _Batch] = {}  # in creation order

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{file_id}", self._file)
        app.router.add_get("/v1/files/{file_id}/content", self._content)
        app.router.add_delete("/v1/files/{file_id}", self._delete)
        app.router.add_post("/v1/batches", self._create)
        app.router.add_get("/v1/batches", self._list)
        app.router.add_get("/v1/batches/{batch_id}", self._retrieve)
        app.router.add_post("/v1/batches/{batch_id}/cancel", self._cancel)

    # --- files ---------------------------------------------------------------------------

    async def _upload(self, request: web.Request) -> web.StreamResponse:
        async def upload() -> web.StreamResponse:
            if not request.content_type.startswith("multipart/"):
                raise _RefusedError("upload the file as multipart/form-data")
            form = await request.post()
            purpose, upload = form.get("purpose"), form.get("file")
            if purpose != "batch":
                raise _RefusedError(f"this server stores batch input files only, not "
                                    f"purpose {purpose!r}", "purpose")
            if not isinstance(upload, web.FileField):
                raise _RefusedError("Missing required parameter: 'file'.", "file")
            if not upload.filename.endswith(".jsonl"):
                raise _RefusedError("Invalid file format for Batch API. Must be .jsonl", "file")
            stored = self._store(upload.filename, "batch", upload.file.read())
            self._counters.record_batch(BatchEvent.FILE_UPLOADED)
            return web.json_response(stored.as_object())
        return await self._answer(request, Endpoint.FILES, upload)

    async def _file(self, request: web.Request) -> web.StreamResponse:
        async def file() -> web.StreamResponse:
            return web.json_response(self._stored(request.match_info["file_id"]).as_object())
        return await self._answer(request, Endpoint.FILES, file)

    async def _content(self, request: web.Request) -> web.StreamResponse:
        async def content() -> web.StreamResponse:
            stored = self._stored(request.match_info["file_id"])
            return web.Response(body=stored.content, content_type="application/octet-stream")
        return await self._answer(request, Endpoint.FILES, content)

    async def _delete(self, request: web.Request) -> web.StreamResponse:
        async def delete() -> web.StreamResponse:
            stored = self._stored(request.match_info["file_id"])
            del self._files[stored.id]
            return web.json_response({"id": stored.id, "object": "file", "deleted": True})
        return await self._answer(request, Endpoint.FILES, delete)

    def _store(self, filename: str, purpose: str, content: bytes) -> StoredFile:
        stored = StoredFile(new_id("file-"), filename, purpose, content, int(time.time()))
        self._files[stored.id] = stored
        return stored

    def _stored(self, file_id: str) -> StoredFile:
        if file_id not in self._files:
            raise _NotFoundError(f"No such File object: {file_id}")
        return self._files[file_id]

    # --- batches -------------------------------------------------------------------------

    async def _create(self, request: web.Request) -> web.StreamResponse:
        async def create() -> web.StreamResponse:
            try:
                body = await request.json()
            except ValueError as exc:
                raise _RefusedError(f"request body is not valid JSON: {exc}") from exc
            if not isinstance(body, dict):
                raise _RefusedError("request body must be a JSON object")
            if body.get("endpoint") != ENDPOINT:
                raise _RefusedError(f"this server batches {ENDPOINT} only, not "
                                    f"{body.get('endpoint')!r}", "endpoint")
            if body.get("completion_window") != COMPLETION_WINDOW:
                raise _RefusedError(f"completion_window must be {COMPLETION_WINDOW!r}",
                                    "completion_window")
            metadata = body.get("metadata")
            if metadata is not None and (metadata := checked_metadata(metadata)) is None:
                raise _RefusedError(METADATA_LIMITS, "metadata")
            input_file = self._stored(str(body.get("input_file_id")))
            if input_file.purpose != "batch":
                raise _RefusedError(f"file {input_file.id} was not uploaded with purpose "
                                    "'batch'", "input_file_id")
            batch = _Batch(new_id("batch_"), input_file, metadata, int(time.time()))
            self._batches[batch.id] = batch
            self._counters.record_batch(BatchEvent.BATCH_CREATED)
            return web.json_response(self._object(batch))
        return await self._answer(request, Endpoint.BATCHES, create)

    async def _retrieve(self, request: web.Request) -> web.StreamResponse:
        async def retrieve() -> web.StreamResponse:
            batch = self._batch(request.match_info["batch_id"])
            self._advance(batch)
            return web.json_response(self._object(batch))
        return await self._answer(request, Endpoint.BATCHES, retrieve)

    async def _list(self, request: web.Request) -> web.StreamResponse:
        async def listed() -> web.StreamResponse:
            try:
                limit = int(request.query.get("limit", "20"))
            except ValueError as exc:
                raise _RefusedError("limit must be an integer", "limit") from exc
            if not 1 <= limit <= 100:
                raise _RefusedError("limit must be between 1 and 100", "limit")
            newest = list(reversed(self._batches.values()))
            after = request.query.get("after")
            if after is not None:
                ids = [batch.id for batch in newest]
                newest = newest[ids.index(after) + 1:] if after in ids else []
            page = newest[:limit]
            for batch in page:
                self._advance(batch)
            data = [self._object(batch) for batch in page]
            return web.json_response({
                "object": "list", "data": data, "has_more": len(newest) > limit,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None})
        return await self._answer(request, Endpoint.BATCHES, listed)

    async def _cancel(self, request: web.Request) -> web.StreamResponse:
        async def cancel() -> web.StreamResponse:
            batch = self._batch(request.match_info["batch_id"])
            if batch.state is BatchState.IN_PROGRESS:
                self._advance(batch)  # the lines due by now are done
            if batch.state in {BatchState.VALIDATING, BatchState.IN_PROGRESS}:
                batch.state = BatchState.CANCELLING
                batch.times["cancelling_at"] = int(time.time())
            elif batch.state in _ENDED and batch.state is not BatchState.CANCELLED:
                raise _RefusedError(f"Cannot cancel a batch with status '{batch.state}'.",
                                    status=409)
            return web.json_response(self._object(batch))
        return await self._answer(request, Endpoint.BATCHES, cancel)

    def _batch(self, batch_id: str) -> _Batch:
        if batch_id not in self._batches:
            raise _NotFoundError(f"No batch found with id '{batch_id}'.")
        return self._batches[batch_id]

    # --- a batch's course --------------------------------------------------------------------

    def _advance(self, batch: _Batch) -> None:
        """Move ``batch`` on as far as the time since it went in_progress allows."""
        now = time.monotonic()
        if batch.state is BatchState.VALIDATING:
            self._validate(batch, now)
        if batch.state is BatchState.IN_PROGRESS:
            window = self._config.batch_completion_s
            expiring = self._expiring(batch)
            runnable = len(batch.lines) // 2 if expiring else len(batch.lines)
            while len(batch.done) < runnable:
                due = batch.started + window * (len(batch.done) + 1) / len(batch.lines)
                if window > 0 and due > now:
                    break
                self._execute(batch, batch.lines[len(batch.done)])
            if now - batch.started >= window:
                self._end(batch, BatchState.EXPIRED if expiring else BatchState.COMPLETED)
        elif batch.state is BatchState.CANCELLING:
            self._end(batch, BatchState.CANCELLED)

    def _expiring(self, batch: _Batch) -> bool:
        """Whether ``batch`` expires: every batch under ``batch_expire``, or one of the
        first ``batch_expire_first`` created."""
        first = self._config.batch_expire_first
        if first > 0:
            return list(self._batches).index(batch.id) < first
        return self._config.batch_expire

    def _validate(self, batch: _Batch, now: float) -> None:
        lines, problems = validate_input(batch.input_file.content)
        if problems:
            batch.state, batch.errors = BatchState.FAILED, problems
            batch.times["failed_at"] = int(time.time())
            self._counters.record_batch(BatchEvent.BATCH_FAILED)
            return
        share = self._config.batch_fail_lines
        failing: set[str] = set()
        for line in lines:
            first = self._counters.record_submission(line.custom_id) == 1
            if first and share > 0 and drawn_share(self._config.seed, line.custom_id) < share:
                failing.add(line.custom_id)
        batch.lines, batch.failing, batch.started = lines, frozenset(failing), now
        batch.model = next((str(line.body["model"]) for line in lines
                            if isinstance(line.body.get("model"), str)), self._config.model)
        batch.state = BatchState.IN_PROGRESS
        batch.times["in_progress_at"] = int(time.time())

    def _execute(self, batch: _Batch, line: InputLine) -> None:
        if line.custom_id in batch.failing:
            status, body = 500, error_body(SERVER_ERROR_MESSAGE, error_type="server_error",
                                           code=None)
        else:
            status, body = self._reply(line.body)
        self._counters.record_batch(BatchEvent.LINE_COMPLETED if status == 200
                                    else BatchEvent.LINE_FAILED)
        batch.done.append(result_line(line.custom_id, status, body))

    def _end(self, batch: _Batch, state: BatchState) -> None:
        """Write the batch's output and error files and give it its final ``state``."""
        now = int(time.time())
        outputs = [line for line in batch.done if line["response"]["status_code"] == 200]
        errors = [line for line in batch.done if line["response"]["status_code"] != 200]
        rest = batch.lines[len(batch.done):]
        if state is BatchState.EXPIRED:
            errors += [expired_line(line.custom_id) for line in rest]
            self._counters.record_batch(BatchEvent.LINE_EXPIRED, len(rest))
        elif state is BatchState.CANCELLED:
            self._counters.record_batch(BatchEvent.LINE_CANCELLED, len(rest))
        else:
            batch.times["finalizing_at"] = now
        if outputs:
            batch.output_file_id = self._store(f"{batch.id}_output.jsonl", "batch_output",
                                               jsonl(outputs)).id
        if errors:
            batch.error_file_id = self._store(f"{batch.id}_error.jsonl", "batch_output",
                                              jsonl(errors)).id
        batch.state = state
        batch.times[f"{state.value}_at"] = now

    def _object(self, batch: _Batch) -> dict[str, Any]:
        """``batch`` as OpenAI's Batch object."""
        statuses = [line["response"]["status_code"] for line in batch.done]
        times = {f"{name}_at": batch.times.get(f"{name}_at") for name in (
            "in_progress", "finalizing", "completed", "failed", "expired", "cancelling",
            "cancelled")}
        return {
            "id": batch.id, "object": "batch", "endpoint": ENDPOINT, "model": batch.model,
            "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
            "input_file_id": batch.input_file.id, "completion_window": COMPLETION_WINDOW,
            "status": batch.state.value, "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id, "created_at": batch.created_at,
            "expires_at": batch.created_at + WINDOW_S, **times,
            "request_counts": {"total": len(batch.lines), "completed": statuses.count(200),
                               "failed": len(statuses) - statuses.count(200)},
            "usage": batch_usage(batch.done), "metadata": batch.metadata}

    # --- answers -------------------------------------------------------------------------

    async def _answer(self, request: web.Request, endpoint: Endpoint,
                      handle: Callable[[], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        """``handle``'s response behind the key check; refusals in OpenAI's error shape."""
        if (denied := self._authorise(request, endpoint)) is not None:
            return denied
        try:
            response = await handle()
        except _NotFoundError as exc:
            self._counters.record(endpoint, Outcome.NOT_FOUND)
            return web.json_response(error_body(str(exc), error_type="invalid_request_error",
                                                code=None), status=404)
        except _RefusedError as exc:
            self._counters.record(endpoint, Outcome.CONFLICT if exc.status == 409
                                  else Outcome.BAD_REQUEST)
            return web.json_response(error_body(str(exc), error_type="invalid_request_error",
                                                code=None, param=exc.param), status=exc.status)
        self._counters.record(endpoint, Outcome.OK)
        return response
