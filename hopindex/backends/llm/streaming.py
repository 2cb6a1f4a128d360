"""Answers that stream: the text of an answer call handed on as the provider writes it.

``LlmClient.stream`` takes the path of ``complete`` (response cache with the same key,
the job's budget, rate limiter, retries, reconcile, usage and metrics); what differs
is here:

- **What is handed on.** Only answer text, once it is settled (``stream_text.py``):
  a reasoning block is held back until it ends and never handed on, nor are
  ``reasoning_content`` deltas; the pieces join to the result's ``content``, which is
  what ``complete`` returns for the same request. The one exception, a closing tag
  whose opening the server stripped, is found only at that tag: the pieces handed on
  stand, ``content`` is the answer all the same (what the caller should show in the
  end, and what is cached), ``llm_stream_answer_revised`` is logged, and the client
  holds back the text of its later streams until their first closing tag.
- **Usage** comes from the stream's final usage chunk (``stream_options.include_usage``);
  a provider that sends none is counted (prompt: the request's estimate; completion:
  every character of the reply, reasoning included, per ``CHARS_PER_TOKEN``). A
  provider that refuses ``stream_options`` with a 400/422 naming it is asked again at
  once without them (not an attempt), and the client stops sending them.
- **Retries** follow ``complete``'s policy, but only until the first piece was handed
  on: the caller has shown that text, so a stream that breaks after it (the connection
  lost, an error event, no chunk within the call timeout, no final chunk) is not
  retried: ``LlmUnavailableError`` says after how many characters and why.
- **Time.** A query's deadline (``query_policy.py``) bounds the time to the first
  piece; from then on the answer may run past it, as long as chunks keep coming within
  the call timeout (the SDK's timeout is httpx's read timeout: a gap between chunks).
- **Cancellation.** A cancelled task closes the HTTP stream at once (the provider sees
  the connection end), settles the limiter's reservation with what the reply used so
  far (and the job's budget hold, around the call), and re-raises ``CancelledError``.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import openai
from openai import AsyncStream
from openai.types.chat import ChatCompletionChunk
from openai.types.completion_usage import CompletionUsage

from hopindex.backends.llm.chat import CHARS_PER_TOKEN, ChatRequest, ChatResult, message_text
from hopindex.backends.llm.observer import LlmObserver, LlmOutcome
from hopindex.backends.llm.query_policy import QueryDeadline
from hopindex.backends.llm.ratelimit import Reservation
from hopindex.backends.llm.reachability import Reachability
from hopindex.backends.llm.reply_json import answer_text
from hopindex.backends.llm.stream_text import AnswerEmitter, OnDelta, begins_inside_reasoning
from hopindex.backends.llm.usage import LlmPrices, UsageMeter
from hopindex.core.errors import HopindexError, LlmUnavailableError
from hopindex.core.logging import get_logger

log = get_logger(__name__)

R = TypeVar("R")

@dataclass(frozen=True, slots=True)
class CallAttempt:
    """One attempt of the client's retry loop, and what it has spent so far."""

    number: int
    reservation: Reservation
    waited_s: float
    started: float
    repair: bool = False


@dataclass(slots=True)
class StreamHabits:
    """What one client learnt of its provider's streams."""

    stream_options: bool = True  # False once refused
    inside_reasoning: bool = False  # its replies begin inside a reasoning block


@dataclass(frozen=True, slots=True)
class _Ending:
    finish_reason: str
    usage: CompletionUsage | None


Settle = Callable[[str, Reservation, int], Awaitable[None]]


class StreamReader:
    """Sends one streamed request per attempt and reads it (``LlmClient._attempts``).

    ``read`` raises the SDK's errors for the retry loop only until a piece was handed
    on; its own bookkeeping (limiter, usage, metrics) it does for a stream that ended,
    broke after text was shown, or was abandoned (cancelled)."""

    def __init__(self, client: openai.AsyncOpenAI, request: ChatRequest, usage: UsageMeter,
                 on_delta: OnDelta, *, model: str, prices: LlmPrices, observer: LlmObserver,
                 reach: Reachability, habits: StreamHabits, settle: Settle) -> None:
        self._client, self._request, self._usage = client, request, usage
        self._on_delta = on_delta
        self._model, self._prices, self._observer = model, prices, observer
        self._reach, self._habits, self._settle = reach, habits, settle

    async def read(self, arguments: dict[str, Any], timeout_s: float,
                   attempt: CallAttempt) -> ChatResult:
        emitter = AnswerEmitter(self._on_delta, inside_reasoning=self._habits.inside_reasoning)
        stream: AsyncStream[ChatCompletionChunk] | None = None
        try:
            stream = await self._open(arguments, timeout_s, attempt)
            self._reach.connected()  # an answer: whatever stretch without one is over
            # Closed on every way out, a cancellation included: the provider sees it end.
            async with stream:
                ending = await _consume(stream, emitter)
            emitter.finish()
        except openai.APIError as exc:
            if not emitter.emitted:
                if isinstance(exc, openai.APIStatusError | openai.APIConnectionError):
                    raise  # before any text: the retry loop decides, as for complete()
                raise openai.APIConnectionError(message=f"the answer stream failed: {exc}",
                                                request=exc.request) from exc
            raise await self._broken(emitter, attempt, exc) from exc
        except BaseException:
            await self._abandoned(emitter, attempt, answered=stream is not None)
            raise
        return self._finished(emitter, ending, attempt)

    async def _open(self, arguments: dict[str, Any], timeout_s: float,
                    attempt: CallAttempt) -> AsyncStream[ChatCompletionChunk]:
        if self._habits.stream_options:
            try:
                return await self._create(arguments, timeout_s, with_usage=True)
            except openai.APIStatusError as exc:
                if exc.status_code not in (400, 422) or "stream_options" not in str(exc):
                    raise
                self._observer.observe_request(self._request.stage, self._model,
                                               LlmOutcome.REJECTED,
                                               time.perf_counter() - attempt.started)
                log.warning("llm_stream_options_refused", stage=self._request.stage,
                            model=self._model, status=exc.status_code)
                self._habits.stream_options = False
        return await self._create(arguments, timeout_s, with_usage=False)

    async def _create(self, arguments: dict[str, Any], timeout_s: float, *,
                      with_usage: bool) -> AsyncStream[ChatCompletionChunk]:
        sent = {**arguments, "stream_options": {"include_usage": True}} if with_usage \
            else arguments
        # The arguments are built as a dict, so the SDK's overloads cannot tell its type.
        stream: AsyncStream[ChatCompletionChunk] = await self._client.chat.completions.create(
            **sent, stream=True, timeout=timeout_s)
        return stream

    def _tokens(self, emitter: AnswerEmitter, reported: CompletionUsage | None) -> tuple[int, int]:
        """Prompt and completion tokens: as reported, else counted from the reply."""
        if reported is not None:
            return reported.prompt_tokens, reported.completion_tokens
        return (self._request.estimated_prompt_tokens(),
                math.ceil((len(emitter.raw) + emitter.reasoning_chars) / CHARS_PER_TOKEN))

    def _finished(self, emitter: AnswerEmitter, ending: _Ending,
                  attempt: CallAttempt) -> ChatResult:
        stage = self._request.stage
        prompt_tokens, completion_tokens = self._tokens(emitter, ending.usage)
        duration_s = time.perf_counter() - attempt.started
        cost = self._prices.cost_of(prompt_tokens, completion_tokens)
        self._observer.observe_request(stage, self._model, LlmOutcome.OK, duration_s,
                                       prompt_tokens=prompt_tokens,
                                       completion_tokens=completion_tokens, cost=cost)
        self._usage.record_call(stage, prompt_tokens=prompt_tokens,
                                completion_tokens=completion_tokens, waited_s=attempt.waited_s,
                                retries=attempt.number - 1, cost=cost, repair=attempt.repair,
                                truncated=ending.finish_reason == "length")
        log.debug("llm_stream_finished", stage=stage, model=self._model, attempt=attempt.number,
                  duration_s=round(duration_s, 3), prompt_tokens=prompt_tokens,
                  completion_tokens=completion_tokens, usage_reported=ending.usage is not None,
                  finish_reason=ending.finish_reason, answer_chars=len(emitter.emitted))
        if emitter.revised:
            self._revised(emitter)
        return ChatResult(content=emitter.raw, prompt_tokens=prompt_tokens,
                          completion_tokens=completion_tokens, cached=False,
                          waited_s=attempt.waited_s, attempts=attempt.number,
                          finish_reason=ending.finish_reason)

    def _revised(self, emitter: AnswerEmitter) -> None:
        """The answer changed after pieces of it were handed on (module docstring)."""
        inside = begins_inside_reasoning(emitter.raw)
        log.warning("llm_stream_answer_revised", stage=self._request.stage, model=self._model,
                    handed_on_chars=len(emitter.emitted),
                    answer_chars=len(answer_text(emitter.raw)), stripped_opening_tag=inside)
        if inside:
            self._habits.inside_reasoning = True

    async def _broken(self, emitter: AnswerEmitter, attempt: CallAttempt,
                      exc: openai.APIError) -> LlmUnavailableError:
        """Account for a stream that broke after text was handed on; the error to raise."""
        stage = self._request.stage
        outcome = (LlmOutcome.TIMEOUT if isinstance(exc, openai.APITimeoutError)
                   else LlmOutcome.SERVER_ERROR)
        prompt_tokens, completion_tokens = await self._spent(emitter, attempt)
        self._observer.observe_request(stage, self._model, outcome,
                                       time.perf_counter() - attempt.started,
                                       prompt_tokens=prompt_tokens,
                                       completion_tokens=completion_tokens,
                                       cost=self._prices.cost_of(prompt_tokens,
                                                                 completion_tokens))
        reason = _reason(exc)
        log.warning("llm_stream_broken", stage=stage, model=self._model,
                    handed_on_chars=len(emitter.emitted), error=reason)
        return LlmUnavailableError(f"{stage}: the answer stream broke after "
                                   f"{len(emitter.emitted)} characters: {reason}")

    async def _abandoned(self, emitter: AnswerEmitter, attempt: CallAttempt, *,
                         answered: bool) -> None:
        """Account for a call given up by its caller (cancelled) or its callback; one
        the provider had not ``answered`` yet used nothing."""
        if answered:
            await self._spent(emitter, attempt)
        else:
            await self._settle(self._request.stage, attempt.reservation, 0)
        log.info("llm_stream_abandoned", stage=self._request.stage, model=self._model,
                 answered=answered, handed_on_chars=len(emitter.emitted))

    async def _spent(self, emitter: AnswerEmitter, attempt: CallAttempt) -> tuple[int, int]:
        """Settle the reservation with, and record, what a stream cut short used: the
        provider bills what it sent."""
        prompt_tokens, completion_tokens = self._tokens(emitter, None)
        await self._settle(self._request.stage, attempt.reservation,
                           prompt_tokens + completion_tokens)
        self._usage.record_call(self._request.stage, prompt_tokens=prompt_tokens,
                                completion_tokens=completion_tokens, waited_s=attempt.waited_s,
                                retries=attempt.number - 1,
                                cost=self._prices.cost_of(prompt_tokens, completion_tokens),
                                repair=attempt.repair)
        return prompt_tokens, completion_tokens


async def _consume(stream: AsyncStream[ChatCompletionChunk], emitter: AnswerEmitter) -> _Ending:
    """Feed the stream's deltas to ``emitter``; how it ended (an ``APIConnectionError``
    for a stream that ended without its final chunk)."""
    finish_reason: str | None = None
    usage: CompletionUsage | None = None
    async for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        emitter.feed(message_text(choice.delta.content), _reasoning(choice.delta))
        if choice.finish_reason is not None:
            finish_reason = choice.finish_reason
    if finish_reason is None:
        raise openai.APIConnectionError(message="the stream ended before its final chunk",
                                        request=stream.response.request)
    return _Ending(finish_reason, usage)


def _reasoning(delta: Any) -> str:
    """A delta's separate reasoning text (``reasoning_content``, or ``reasoning`` as
    some gateways name it): counted, never handed on."""
    extra = getattr(delta, "model_extra", None) or {}
    return "".join(text for key in ("reasoning_content", "reasoning")
                   if isinstance(text := extra.get(key), str))


def _reason(exc: openai.APIError) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "no chunk within the call timeout"
    cause = exc.__cause__
    return f"{exc}" if cause is None else f"{exc} ({type(cause).__name__}: {cause})"


async def within_first_delta(deadline: QueryDeadline | None, stage: str, on_delta: OnDelta,
                             call: Callable[[OnDelta], Coroutine[Any, Any, R]]) -> R:
    """``call(on_delta)`` under the query's deadline until its first piece of text:
    not started when an earlier step failed or no time is left, cut when time runs out
    before the first piece, unbounded by it after (the call timeout still holds
    between chunks). A failure is recorded so the query's later LLM steps are skipped."""
    if deadline is None:
        return await call(on_delta)
    deadline.check(stage)
    try:
        async with asyncio.timeout(max(0.0, deadline.remaining_s())) as limit:
            def released(text: str) -> None:
                if limit.when() is not None and not limit.expired():
                    limit.reschedule(None)
                on_delta(text)

            return await call(released)
    except TimeoutError as exc:
        reason = f"the query's LLM deadline of {deadline.total_s:g}s passed before its answer began"
        deadline.fail(stage, reason)
        raise LlmUnavailableError(f"{stage}: {reason}") from exc
    except HopindexError as exc:
        deadline.fail(stage, str(exc))
        raise
