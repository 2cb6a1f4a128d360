"""Calls in batch mode: each request is answered by its line of a provider batch.

A request's line is named by the hash of the exact body the provider would receive
(``line_key``): the same request asked again, by the same task run again or by
another one, is the same line. Its result, once the poller has read its batch
(scheduler/provider_batches.py), is kept in the response cache's store under
``LINE_PREFIX + key`` (``LineResult``):

- a reply is read as a synchronous reply is (the reader, the repair, the larger
  budget), and what those need is one more line, for the next batch;
- a line refused for its ``response_format`` steps the output mode down, as a
  synchronous refusal does, and asks again in the weaker mode (a new line);
- a line that failed for the provider's reasons (a 5xx, the batch expired or was
  cancelled) is sent again in the next batch, up to ``max_rounds`` batches; then, like
  a provider that keeps failing, its item fails for a repair to redo;
- any other refusal is the item's permanent failure, as it is synchronously.

What a batch cost is counted once, by the poller that reads it, at the batch price;
the task that reads a result counts nothing (it reads it again on every run).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from hopindex.backends.llm.batch_scope import BatchDeferred, BatchScope, PendingLine
from hopindex.backends.llm.cache import ResponseCache
from hopindex.backends.llm.chat import ChatRequest, ChatResult, message_text
from hopindex.backends.llm.output_modes import OutputMode
from hopindex.backends.llm.usage import LlmPrices
from hopindex.core.errors import BackendError, LlmUnavailableError, PermanentStageError
from hopindex.core.ids import sha256_hex
from hopindex.core.logging import get_logger

log = get_logger(__name__)

LINE_PREFIX = "batch-line:"
# OpenAI's code for a line its batch did not reach before the completion window ended.
EXPIRED_CODE = "batch_expired"
CANCELLED_CODE = "batch_cancelled"


def line_key(body: dict[str, Any]) -> str:
    """The line's name (its custom_id): the hash of the body the provider receives."""
    return sha256_hex(json.dumps(body, sort_keys=True, separators=(",", ":"),
                                 ensure_ascii=False))


def batch_prices(prices: LlmPrices, discount: float) -> LlmPrices:
    """The synchronous prices less the provider's batch discount."""
    if not prices.is_priced:
        return prices
    keep = 1.0 - discount
    return LlmPrices(input_per_mtok=(prices.input_per_mtok or 0.0) * keep,
                     output_per_mtok=(prices.output_per_mtok or 0.0) * keep)


@dataclass(frozen=True, slots=True)
class LineResult:
    """One line's outcome as the poller stores it: a reply, or an error."""

    content: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    # An error instead of a reply: the provider's status (0: none, the line was never
    # run), its code and message.
    status: int = 0
    code: str = ""
    message: str = ""
    # How many batches this line has been sent in.
    rounds: int = 1

    @property
    def is_error(self) -> bool:
        return bool(self.code) or self.status >= 400

    @property
    def retryable(self) -> bool:
        """A failure of the provider's, not of the request: worth another batch."""
        return (self.code in (EXPIRED_CODE, CANCELLED_CODE) or self.status >= 500
                or self.status == 429)

    def to_json(self) -> str:
        return json.dumps({"content": self.content, "prompt_tokens": self.prompt_tokens,
                           "completion_tokens": self.completion_tokens,
                           "finish_reason": self.finish_reason, "status": self.status,
                           "code": self.code, "message": self.message,
                           "rounds": self.rounds}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> LineResult:
        data = json.loads(text)
        return cls(content=str(data.get("content", "")),
                   prompt_tokens=int(data.get("prompt_tokens", 0)),
                   completion_tokens=int(data.get("completion_tokens", 0)),
                   finish_reason=data.get("finish_reason"), status=int(data.get("status", 0)),
                   code=str(data.get("code", "")), message=str(data.get("message", "")),
                   rounds=int(data.get("rounds", 1)))

    @classmethod
    def from_completion(cls, body: dict[str, Any], rounds: int) -> LineResult:
        """A line's chat completion (the output file's ``response.body``)."""
        choices = body.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        return cls(content=message_text((message or {}).get("content")),
                   prompt_tokens=int((usage or {}).get("prompt_tokens") or 0),
                   completion_tokens=int((usage or {}).get("completion_tokens") or 0),
                   finish_reason=choice.get("finish_reason"), rounds=rounds)


class LineStore:
    """The stored line results, in the response cache's store."""

    def __init__(self, cache: ResponseCache) -> None:
        self._cache = cache

    async def read(self, key: str) -> LineResult | None:
        text = await self._cache.get_response(LINE_PREFIX + key)
        if text is None:
            return None
        try:
            return LineResult.from_json(text)
        except (ValueError, TypeError, KeyError) as exc:
            # A record we cannot read is no result: the line is asked again.
            log.warning("llm_batch_line_unreadable", key=key, error=str(exc))
            return None

    async def write(self, key: str, result: LineResult) -> None:
        await self._cache.put_response(LINE_PREFIX + key, result.to_json())


FirstMode = Callable[[ChatRequest], Awaitable[OutputMode]]
Arguments = Callable[[ChatRequest, OutputMode], dict[str, Any]]
StepDown = Callable[[ChatRequest, OutputMode, int, str], Awaitable[OutputMode | None]]


class BatchCalls:
    """The client's calls when a job's meter carries a ``BatchScope``."""

    def __init__(self, cache: ResponseCache | None, *, first_mode: FirstMode,
                 arguments: Arguments, step_down: StepDown) -> None:
        self._lines = LineStore(cache) if cache is not None else None
        self._first_mode = first_mode
        self._arguments = arguments
        self._step_down = step_down

    @property
    def lines(self) -> LineStore | None:
        return self._lines

    async def call(self, request: ChatRequest, scope: BatchScope) -> ChatResult:
        """The request's stored result, or ``BatchDeferred`` with its line noted."""
        if self._lines is None:
            raise BackendError("batch mode keeps the provider's replies in the response "
                               "cache, which is off (HOPINDEX_LLM_CACHE)")
        mode = await self._first_mode(request)
        while True:
            body = self._arguments(request, mode)
            key = line_key(body)
            try:
                result = await self._lines.read(key)
            except BackendError as exc:
                # Unlike a reply cache, the results cannot be asked for again here:
                # the task retries once the store answers.
                log.warning("llm_batch_line_read_failed", stage=request.stage, error=str(exc))
                raise
            if result is None:
                raise self._deferred(request, scope, key, body)
            if not result.is_error:
                return ChatResult(content=result.content, prompt_tokens=0, completion_tokens=0,
                                  cached=True, finish_reason=result.finish_reason)
            weaker = await self._step_down(request, mode, result.status, result.message)
            if weaker is not None:
                mode = weaker  # the mode was refused, not the request: ask in the next
                continue
            if result.retryable and result.rounds < scope.max_rounds:
                raise self._deferred(request, scope, key, body)
            if result.retryable:
                raise LlmUnavailableError(
                    f"{request.stage}: the batch line failed in {result.rounds} batches; "
                    f"last: {result.code or result.status} {result.message}")
            raise PermanentStageError(f"{request.stage}: the LLM provider rejected the "
                                      f"batch line ({result.status}): {result.message}")

    @staticmethod
    def _deferred(request: ChatRequest, scope: BatchScope, key: str,
                  body: dict[str, Any]) -> BatchDeferred:
        scope.defer(PendingLine(key, request.stage, body, request.estimated_prompt_tokens(),
                                request.estimated_completion_tokens()))
        return BatchDeferred(key)
