"""The LLM provider's Batch API (OpenAI's ``/v1/files`` and ``/v1/batches``): index-time
chat-completions requests sent as one batch instead of one call at a time.

A batch is a JSONL input file of request bodies, each under a ``custom_id``, uploaded
with ``purpose=batch`` and created with a 24 h completion window. The provider
validates it (a malformed line fails the whole batch, its ``errors`` naming the
lines), runs its lines, and leaves an output file (each line's 200 response) and an
error file (any other status, and the lines its window closed on). Lines are matched
by custom_id, never by order. This module makes those calls; ``batch_files`` writes
and reads those files and holds the typed values (exported here too). Polling,
resubmission and job states belong to the caller.

What fails is mapped to hopindex's error root: a refused key is
``LlmAuthenticationError``; a provider without the Batch API (no ``/v1/files`` or
``/v1/batches``: a 404 or 405 that is not an OpenAI error object) is
``LlmBatchUnavailableError``, which names the base URL; a batch failed at validation
is ``LlmBatchFailedError``, naming its lines; an id the provider does not hold is
``NotFoundError``; 429s, 5xx and lost connections (past the SDK client's own retries)
are ``LlmUnavailableError``, with the pause the provider asked for; any other refusal
is ``PermanentStageError``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import openai

from hopindex.backends.llm.batch_files import (
    CHAT_ENDPOINT,
    COMPLETION_WINDOW,
    BatchCounts,
    BatchLine,
    BatchLineError,
    BatchProblem,
    BatchResults,
    BatchStatus,
    BatchTicket,
    input_ids,
    read_result_file,
    write_input_file,
)
from hopindex.backends.llm.retry import retry_after_s
from hopindex.core.errors import (
    BackendError,
    HopindexError,
    LlmAuthenticationError,
    LlmBatchFailedError,
    LlmBatchUnavailableError,
    LlmUnavailableError,
    NotFoundError,
    PermanentStageError,
)
from hopindex.core.logging import get_logger
from hopindex.core.provider_batches import BatchState
from hopindex.core.redact import redact_url

__all__ = ["CHAT_ENDPOINT", "BatchCounts", "BatchLine", "BatchLineError", "BatchProblem",
           "BatchResults", "BatchState", "BatchStatus", "BatchTicket", "ProviderBatches",
           "write_input_file"]

log = get_logger(__name__)

INPUT_FILENAME = "hopindex-batch.jsonl"  # OpenAI refuses a batch file not named .jsonl
# A failed batch's message names this many of its problems, then counts the rest.
_NAMED_PROBLEMS = 5
# What a server without the Batch API answers for its routes.
_ABSENT_ROUTE_STATUSES = frozenset({404, 405, 501})


class ProviderBatches:
    """The Batch API calls over one ``openai.AsyncOpenAI`` client (its retries and
    timeout are the caller's choice; errors past them are mapped as the module says)."""

    def __init__(self, client: openai.AsyncOpenAI) -> None:
        self._client = client
        self._where = redact_url(str(client.base_url))

    async def submit_batch(self, lines: Sequence[BatchLine], *,
                           metadata: Mapping[str, str]) -> BatchTicket:
        """Upload ``lines`` as an input file and create a batch of it."""
        content = write_input_file(lines)
        try:
            uploaded = await self._client.files.create(
                file=(INPUT_FILENAME, content, "application/jsonl"), purpose="batch")
        except openai.APIError as exc:
            # Nothing names an object here: any 404 is the route missing.
            raise self._mapped(exc, "upload a batch input file", route=True) from exc
        try:
            batch = await self._client.batches.create(
                input_file_id=uploaded.id, endpoint=CHAT_ENDPOINT,
                completion_window=COMPLETION_WINDOW, metadata=dict(metadata))
        except openai.APIError as exc:
            # A refused batch leaves its file behind; a lost answer may have created the
            # batch, which needs the file, so that one is kept.
            if isinstance(exc, openai.APIStatusError):
                await self._delete_quietly(uploaded.id)
            raise self._mapped(exc, "create a batch") from exc
        log.info("llm_batch_submitted", batch_id=batch.id, input_file_id=uploaded.id,
                 lines=len(lines), bytes=len(content))
        return BatchTicket(batch.id, uploaded.id)

    async def get_batch(self, batch_id: str) -> BatchStatus:
        """The batch as the provider has it now (a failed batch included: see
        ``read_results``)."""
        try:
            batch = await self._client.batches.retrieve(batch_id)
        except openai.APIError as exc:
            raise self._mapped(exc, f"retrieve batch {batch_id}") from exc
        return self._status(batch)

    async def find_batch(self, key: str, value: str, *, limit: int = 1000) -> str | None:
        """The id of the newest batch whose metadata maps ``key`` to ``value``, among
        the provider's ``limit`` newest; None when none does. A sender stopped between
        creating a batch and recording its id finds it again by a token it put there."""
        try:
            seen = 0
            async for batch in self._client.batches.list(limit=min(limit, 100)):
                if (batch.metadata or {}).get(key) == value:
                    return batch.id
                seen += 1
                if seen >= limit:
                    break
        except openai.APIError as exc:
            raise self._mapped(exc, "list batches") from exc
        return None

    async def cancel_batch(self, batch_id: str) -> BatchStatus:
        """Ask the provider to cancel; the status it answers (``cancelling``, or the
        batch as it ended when it had ended already)."""
        try:
            batch = await self._client.batches.cancel(batch_id)
        except openai.ConflictError:
            return await self.get_batch(batch_id)  # ended before the cancel reached it
        except openai.APIError as exc:
            raise self._mapped(exc, f"cancel batch {batch_id}") from exc
        return self._status(batch)

    async def read_results(self, status: BatchStatus, *,
                           custom_ids: Collection[str] | None = None) -> BatchResults:
        """The lines of an ended batch, from its output and error files.

        ``missing`` needs the batch's custom_ids: ``custom_ids`` when the caller kept
        them, else they are read from the input file when some line may be in neither
        file. ``LlmBatchFailedError`` for a batch failed at validation; ``ValueError``
        for one that has not ended."""
        if status.state is BatchState.FAILED:
            raise _failed(status)
        if not status.state.ended:
            raise ValueError(f"batch {status.batch_id} is {status.state}: it has no "
                             "results yet")
        replies: dict[str, dict[str, Any] | BatchLineError] = {}
        # The output file last: a line somehow in both files was answered.
        for file_id in (status.error_file_id, status.output_file_id):
            if file_id:
                read, unreadable = read_result_file(await self._download(file_id))
                if unreadable:
                    log.warning("llm_batch_lines_unreadable", batch_id=status.batch_id,
                                file_id=file_id, lines=unreadable)
                replies.update(read)
        expected: Collection[str] = custom_ids if custom_ids is not None else ()
        if custom_ids is None and (status.state is not BatchState.COMPLETED
                                   or len(replies) < status.counts.total):
            expected = input_ids(await self._download(status.input_file_id))
        return BatchResults(status.batch_id, replies,
                            frozenset(custom_id for custom_id in expected
                                      if custom_id not in replies))

    async def delete_files(self, *file_ids: str | None) -> None:
        """Delete the files named (None skipped); one already gone is no error."""
        for file_id in file_ids:
            if not file_id:
                continue
            try:
                await self._client.files.delete(file_id)
            except openai.NotFoundError:
                continue
            except openai.APIError as exc:
                raise self._mapped(exc, f"delete file {file_id}") from exc

    # --- helpers -------------------------------------------------------------------------

    async def _download(self, file_id: str) -> bytes:
        try:
            response = await self._client.files.content(file_id)
        except openai.APIError as exc:
            raise self._mapped(exc, f"download file {file_id}") from exc
        return response.content

    async def _delete_quietly(self, file_id: str) -> None:
        try:
            await self._client.files.delete(file_id)
        except openai.APIError as exc:
            log.warning("llm_batch_file_left", file_id=file_id, error=str(exc))

    def _status(self, batch: openai.types.Batch) -> BatchStatus:
        try:
            state = BatchState(batch.status)
        except ValueError as exc:
            raise BackendError(f"the LLM provider at {self._where} reports batch {batch.id} "
                               f"as {batch.status!r}, which the Batch API does not "
                               "have") from exc
        counts = batch.request_counts
        problems = batch.errors.data if batch.errors is not None else None
        return BatchStatus(
            batch.id, state,
            BatchCounts(counts.total, counts.completed, counts.failed) if counts
            else BatchCounts(0, 0, 0),
            batch.input_file_id, batch.output_file_id, batch.error_file_id,
            tuple(BatchProblem(problem.code or "invalid", problem.message or "",
                               problem.line, problem.param) for problem in problems or ()),
            dict(batch.metadata or {}))

    def _mapped(self, exc: openai.APIError, doing: str, *, route: bool = False) -> HopindexError:
        """``exc`` as hopindex's error; ``route``: a 404 can only mean the route."""
        where = self._where
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            return LlmAuthenticationError(
                f"the LLM provider at {where} refused the API key ({exc.status_code}) to "
                f"{doing} (OPENAI_API_KEY / HOPINDEX_LLM_API_KEY)")
        if isinstance(exc, openai.APIStatusError) and exc.status_code in _ABSENT_ROUTE_STATUSES \
                and (route or not _error_object(exc.body)):
            return LlmBatchUnavailableError(
                f"batch mode is unavailable at {where}: the provider does not offer the "
                f"Batch API (/v1/files and /v1/batches; {doing} answered "
                f"{exc.status_code}); use a provider that does, or turn batch mode off")
        if isinstance(exc, openai.NotFoundError):
            return NotFoundError(f"the LLM provider at {where} could not {doing}: "
                                 f"{_message(exc)}")
        if isinstance(exc, openai.RateLimitError | openai.InternalServerError
                      | openai.APIConnectionError):
            headers = getattr(getattr(exc, "response", None), "headers", None)
            return LlmUnavailableError(
                f"the LLM provider at {where} failed to {doing}: {_message(exc)}",
                retry_after_s=retry_after_s(headers) or 1.0)
        if isinstance(exc, openai.APIStatusError):
            return PermanentStageError(f"the LLM provider at {where} refused to {doing} "
                                       f"({exc.status_code}): {_message(exc)}")
        return LlmUnavailableError(f"the LLM provider at {where} failed to {doing}: "
                                   f"{_message(exc)}")


def _failed(status: BatchStatus) -> LlmBatchFailedError:
    named = "; ".join(problem.describe() for problem in status.errors[:_NAMED_PROBLEMS])
    more = len(status.errors) - _NAMED_PROBLEMS
    return LlmBatchFailedError(
        f"batch {status.batch_id} failed at validation: {named or 'no reason given'}"
        + (f" (and {more} more)" if more > 0 else ""))


def _error_object(body: object) -> bool:
    """Whether an error's body is an OpenAI error object (the SDK hands its ``error``):
    a 404 about an object the route knows, not a route the server does not have."""
    return isinstance(body, dict) and isinstance(body.get("message"), str) and "type" in body


def _message(exc: openai.APIError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return str(exc)
