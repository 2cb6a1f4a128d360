"""One async client over the OpenAI protocol, used by every LLM-driven method.

Around each call, in this order (docs/architecture.md): response cache → the job's
LLM budget, when it has one (reserve an estimate; a refusal pauses the job:
``BudgetExhaustedError``) → rate limiter (reserve an estimate) → the call with a
timeout → retries with jittered exponential backoff on 429/5xx/timeouts/connection
errors (a 429 holds back every process sharing the limiter for its Retry-After; no
connection at all gets quick retries bounded in time: ``reachability.py``) →
reconcile the reservation with the reported usage → usage accounting. Structured
replies are asked for in the strongest output mode the provider honours
(``output_modes.py``) and read leniently (``structured.py``: the JSON wherever the
model put it, then the caller's parser with item-level tolerance), with one second
request for a reply that cannot be used: a larger budget when it was cut, else a
repair. A query's calls run under its deadline (``query_policy.py``). An answer can
stream, its text handed on as the provider writes it (``streaming.py``). Each step is
reported to an :class:`LlmObserver` (metrics), when one is given.

What fails here is either the item's fault or the infrastructure's. An invalid
reply after the repair (``LlmOutputError``), a request the provider refuses for
good (``PermanentStageError``) and the provider failing every attempt
(``LlmUnavailableError``) belong to the document or entity asking. The rate
limiter failing to admit a call is the infrastructure's: it raises its own
retryable error, and the task retries. The cache and the limiter's bookkeeping
never cost a reply: a cache that cannot be read is a miss; a reply that cannot be
stored (logged and counted) or reconciled (logged) is returned all the same.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar
from urllib.parse import urlsplit

import openai

from hopindex.backends.llm.batch_api import ProviderBatches
from hopindex.backends.llm.batch_calls import BatchCalls, batch_prices
from hopindex.backends.llm.batch_desk import BatchDesk
from hopindex.backends.llm.budget import LlmBudget
from hopindex.backends.llm.budget_gate import BudgetGate
from hopindex.backends.llm.cache import ResponseCache, cache_key
from hopindex.backends.llm.cache_use import ObservedCache

# The call's shapes live in chat.py; importers have always found them here.
from hopindex.backends.llm.chat import (
    CHARS_PER_TOKEN,
    DEFAULT_COMPLETION_ESTIMATE,
    ChatRequest,
    ChatResult,
    LlmSettings,
    ResponseFormat,
    message_text,
)
from hopindex.backends.llm.credentials import sdk_api_key
from hopindex.backends.llm.observer import (
    LlmObserver,
    LlmOutcome,
    NullLlmObserver,
    ReplyFix,
)
from hopindex.backends.llm.output_modes import (
    ModeNegotiator,
    OutputMode,
    OutputModeMemory,
    ProcessOutputModes,
    response_format,
)
from hopindex.backends.llm.query_policy import within_deadline
from hopindex.backends.llm.ratelimit import RateLimiter, Reservation
from hopindex.backends.llm.reachability import Reachability
from hopindex.backends.llm.reply_json import answer_text
from hopindex.backends.llm.reply_shapes import ReplyNotes
from hopindex.backends.llm.retry import full_jitter_s, retry_after_s
from hopindex.backends.llm.stream_text import OnDelta
from hopindex.backends.llm.streaming import (
    CallAttempt,
    StreamHabits,
    StreamReader,
    within_first_delta,
)
from hopindex.backends.llm.structured import (
    larger_budget,
    parse_cached,
    read_result,
    second_request,
)
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.budget import BudgetCharge, BudgetLimits, BudgetStatus
from hopindex.core.errors import (
    BackendError,
    LlmAuthenticationError,
    LlmUnavailableError,
    PermanentStageError,
    ReplyShapeError,
)
from hopindex.core.logging import get_logger
from hopindex.core.redact import redact_url
from hopindex.core.tracing import genai
from hopindex.core.tracing.genai import llm_span
from hopindex.core.tracing.spans import SpanLike

log = get_logger(__name__)

__all__ = ["CHARS_PER_TOKEN", "DEFAULT_COMPLETION_ESTIMATE", "ChatRequest", "ChatResult",
           "LlmClient", "LlmSettings", "ResponseFormat"]

T = TypeVar("T")
R = TypeVar("R")

class LlmClient:
    def __init__(self, settings: LlmSettings, limiter: RateLimiter,
                 cache: ResponseCache | None = None, *,
                 client: openai.AsyncOpenAI | None = None,
                 observer: LlmObserver | None = None,
                 budget: LlmBudget | None = None,
                 modes: OutputModeMemory | None = None) -> None:
        self.settings = settings
        self._limiter = limiter
        self._modes = ModeNegotiator(modes or ProcessOutputModes(), settings.output_mode,
                                     base_url=settings.base_url, model=settings.model)
        self._replies = ObservedCache(cache, observer or NullLlmObserver())
        self._batch = BatchCalls(cache, first_mode=self._first_mode, arguments=self._arguments,
                                 step_down=self._line_step_down)
        self._budget = budget
        self._gate = BudgetGate(budget, settings.prices) if budget is not None else None
        self._observer: LlmObserver = observer or NullLlmObserver()
        self._reach = Reachability(settings.base_url, settings.connect_give_up_s,
                                   backoff_base_s=settings.backoff_base_s)
        self._stream_habits = StreamHabits()
        # server.address on each request's span: the host only, never credentials.
        self._server = urlsplit(settings.base_url).hostname
        # Our own retry loop decides, with the shared limiter; the SDK's would not.
        self._client = client or openai.AsyncOpenAI(
            base_url=settings.base_url, api_key=sdk_api_key(settings.api_key), max_retries=0,
            timeout=settings.timeout_s)

    async def close(self) -> None:
        await self._client.close()
        await self._replies.close()
        if self._budget is not None:
            await self._budget.close()
        await self._modes.close()
        await self._limiter.close()

    async def forget_budget(self, job_id: str) -> None:
        """Drop a finished job's budget account."""
        if self._budget is not None:
            await self._budget.forget(job_id)

    async def budget_status(self, job_id: str, limits: BudgetLimits) -> BudgetStatus | None:
        """What the job's settled calls spent and its calls in flight hold, against
        ``limits``; None without a budget store."""
        if self._budget is None:
            return None
        return await self._budget.status(job_id, limits)

    async def hold_budget(self, job_id: str, limits: BudgetLimits,
                          charges: Sequence[BudgetCharge]) -> int:
        """Hold ``charges`` in order up to the first that does not fit (a batch's lines);
        how many are held."""
        if self._budget is None:
            return len(charges)
        for held, charge in enumerate(charges):
            if not await self._budget.reserve(job_id, limits, charge):
                return held
        return len(charges)

    async def settle_budget(self, job_id: str, held: BudgetCharge, spent: BudgetCharge) -> None:
        if self._budget is not None:
            await self._budget.settle(job_id, held, spent)

    async def complete(self, request: ChatRequest, usage: UsageMeter, *,
                       whole: bool = False) -> ChatResult:
        """A text reply, without the reasoning block a reasoning model puts first.

        A reply cut at its budget is returned with ``truncated`` set, for a caller
        that keeps it and says so (a query's answer). ``whole``: the text becomes a
        unit (an index-time summary), so a cut reply is asked once more with a larger
        budget, counted as a repair; a reply still cut is returned marked."""
        return await within_deadline(usage.deadline, request.stage,
                                     self._complete_text(request, usage, whole=whole))

    async def stream(self, request: ChatRequest, usage: UsageMeter,
                     on_delta: OnDelta) -> ChatResult:
        """``complete``'s reply, its answer handed to ``on_delta`` piece by piece as
        the provider writes it (a cache hit in one piece); see ``streaming.py``."""
        return await within_first_delta(usage.deadline, request.stage, on_delta,
                                        lambda emit: self._stream_text(request, usage, emit))

    async def complete_json(self, request: ChatRequest, parse: Callable[[Any], T],
                            usage: UsageMeter) -> T:
        """The parsed reply (``structured.py``: the first JSON value in it that
        ``parse`` accepts). A reply that cannot be used earns one more request, a retry
        with a larger budget when it was cut at its budget and else a repair call that
        says what was wrong; then ``ReplyShapeError`` (an ``LlmOutputError``: the
        document's or entity's permanent failure). A query (``usage.deadline``) makes
        no repair call: its method degrades instead."""
        return await within_deadline(usage.deadline, request.stage,
                                     self._complete_json(request, parse, usage))

    async def _complete_text(self, request: ChatRequest, usage: UsageMeter, *,
                             whole: bool) -> ChatResult:
        key = self._key(request)
        if (cached := await self._cached_text(request, usage, key)) is not None:
            return cached
        result = await self._call(request, usage)
        if whole and result.truncated and usage.deadline is None:
            self._observer.observe_reply_fix(request.stage, self.settings.model,
                                             ReplyFix.BUDGET_RETRY)
            result = await self._call(replace(request, max_tokens=larger_budget(
                request.max_tokens, result.completion_tokens)), usage, repair=True)
        return await self._kept_text(request.stage, key, result)

    async def _stream_text(self, request: ChatRequest, usage: UsageMeter,
                           on_delta: OnDelta) -> ChatResult:
        key = self._key(request)
        if (cached := await self._cached_text(request, usage, key)) is not None:
            if cached.content:
                on_delta(cached.content)
            return cached
        reader = StreamReader(self._client, request, usage, on_delta, model=self.settings.model,
                              prices=self.settings.prices, observer=self._observer,
                              reach=self._reach, habits=self._stream_habits, settle=self._settle)
        return await self._kept_text(request.stage, key,
                                     await self._call(request, usage, reader=reader))

    async def _cached_text(self, request: ChatRequest, usage: UsageMeter,
                           key: str) -> ChatResult | None:
        cached = await self._replies.read(request.stage, key)
        if cached is None:
            return None
        self._cache_hit(request.stage, usage)
        return ChatResult(content=answer_text(cached), prompt_tokens=0, completion_tokens=0,
                          cached=True)

    def _cache_hit(self, stage: str, usage: UsageMeter) -> None:
        """A reply the cache gave: counted, and a span of its own (no request sent)."""
        usage.record_cache_hit(stage, cost=self.settings.prices.cost_of(0, 0))
        with llm_span(stage, self.settings.model, server=self._server,
                      attributes={genai.CACHE_HIT: True}):
            pass

    async def _kept_text(self, stage: str, key: str, result: ChatResult) -> ChatResult:
        """A text reply as its answer, cached when it is one."""
        answer = answer_text(result.content)
        # An empty reply is the model failing, not an answer: caching it would make
        # every later run of the same prompt fail the same way for free. Nor is a cut
        # one cached: a later run with a larger budget should get the whole answer.
        if answer and not result.truncated:
            await self._replies.write(stage, key, result.content)
        return replace(result, content=answer)

    async def _complete_json(self, request: ChatRequest, parse: Callable[[Any], T],
                             usage: UsageMeter) -> T:
        request = replace(request, response_format=ResponseFormat.JSON)
        key = self._key(request)
        found = parse_cached(request.stage, await self._replies.read(request.stage, key), parse)
        if found is not None:
            self._cache_hit(request.stage, usage)
            self._record_reading(request.stage, usage, found.notes)
            return found.value
        result = await self._call(request, usage)
        try:
            parsed = read_result(request.stage, result, parse)
        except ReplyShapeError as first:
            if usage.deadline is not None:
                raise  # a query degrades instead of a second request
            second_kind = "larger-budget retry" if result.truncated else "repair call"
            self._observer.observe_reply_fix(
                request.stage, self.settings.model,
                ReplyFix.BUDGET_RETRY if result.truncated else ReplyFix.REPAIR_CALL)
            result = await self._call(second_request(request, result, first), usage,
                                      repair=True)
            try:
                parsed = read_result(request.stage, result, parse)
            except ReplyShapeError as second:
                raise ReplyShapeError(f"{second} (after one {second_kind})") from second
        self._record_reading(request.stage, usage, parsed.notes)
        await self._replies.write(request.stage, key, result.content)
        return parsed.value

    def _record_reading(self, stage: str, usage: UsageMeter, notes: ReplyNotes) -> None:
        usage.record_reading(stage, notes)
        for fix, count in ((ReplyFix.COERCED, notes.coerced), (ReplyFix.DROPPED, notes.dropped),
                           (ReplyFix.RESCALED, notes.rescaled)):
            if count:
                self._observer.observe_reply_fix(stage, self.settings.model, fix, count)
        if notes.dropped:
            log.info("llm_reply_items_dropped", stage=stage, dropped=notes.dropped,
                     reasons=dict(notes.reasons))

    async def _settle(self, stage: str, reservation: Reservation, actual_tokens: int) -> None:
        """Reconcile a reservation with what the call used. This is bookkeeping: when
        the limiter cannot take it, the budget is off by one estimate for a while, which
        is no reason to lose a reply or to hide the call's own outcome."""
        try:
            await self._limiter.reconcile(reservation, actual_tokens)
        except BackendError as exc:
            log.warning("llm_limiter_reconcile_failed", stage=stage, error=str(exc))

    async def _penalize(self, stage: str, retry_after_s: float) -> None:
        """Hold back every process sharing the budget; when the limiter cannot take the
        hold, this call's own backoff still waits, and its next admission asks the
        limiter again (failing the task there if it is still away)."""
        try:
            await self._limiter.penalize(self.settings.model, retry_after_s)
        except BackendError as exc:
            log.warning("llm_limiter_penalize_failed", stage=stage, error=str(exc))

    def _key(self, request: ChatRequest) -> str:
        return cache_key(model=self.settings.model, messages=request.as_messages(),
                         temperature=request.temperature,
                         response_format=request.response_format.value, seed=request.seed)

    async def _call(self, request: ChatRequest, usage: UsageMeter, *,
                    repair: bool = False, reader: StreamReader | None = None) -> ChatResult:
        """One paid request: held against the job's budget first, when it has one.
        ``repair``: the second request for one reply (counted as such); ``reader``:
        sent streaming, and read by it."""
        if usage.batch is not None and reader is None and usage.deadline is None:
            # The job's budget held this call's line at the batch price when its batch
            # was sent (scheduler/provider_batches.py).
            return await self._batch.call(request, usage.batch)
        scope = usage.budget
        if scope is None or self._gate is None or not scope.limits.is_limited:
            return await self._attempts(request, usage, repair=repair, reader=reader)
        held = await self._gate.hold(request, usage, scope)
        result: ChatResult | None = None
        try:
            result = await self._attempts(request, usage, repair=repair, reader=reader,
                                          held=held)
            return result
        finally:
            await self._gate.settle(request.stage, scope, held, result)

    async def _attempts(self, request: ChatRequest, usage: UsageMeter, *,
                        repair: bool = False, reader: StreamReader | None = None,
                        held: BudgetCharge | None = None) -> ChatResult:
        model = self.settings.model
        estimate = request.estimated_tokens()
        mode = await self._first_mode(request)
        waited_s = 0.0
        last_error = ""
        attempt = connect_tries = 0
        while attempt < self.settings.max_attempts:
            attempt += 1
            # One span per request sent (tracing on): its number, its wait, its error.
            with llm_span(request.stage, model, server=self._server, attributes={
                    genai.ATTEMPT: attempt + connect_tries, genai.CACHE_HIT: False,
                    genai.OUTPUT_MODE: mode.value,
                    genai.REQUEST_MAX_TOKENS: request.max_tokens,
                    genai.REQUEST_TEMPERATURE: request.temperature}) as span:
                genai.set_budget(span, held.tokens if held else None,
                                 held.cost if held else None)
                reservation = await self._admitted(request.stage, estimate)
                span.set_attribute(genai.WAITED_S, round(reservation.waited_s, 6))
                waited_s += reservation.waited_s
                started = time.perf_counter()
                try:
                    result = await self._send(request, usage, mode, reader, CallAttempt(
                        attempt, reservation, waited_s, started, repair))
                except openai.AuthenticationError as exc:
                    await self._failed(span, request, LlmOutcome.UNAUTHORIZED, exc,
                                       started=started, reservation=reservation)
                    refused = ("refused the API key" if self.settings.api_key else
                               "asks for an API key and none is set")
                    raise LlmAuthenticationError(
                        f"the LLM provider at {redact_url(self.settings.base_url)} {refused} "
                        "(OPENAI_API_KEY / HOPINDEX_LLM_API_KEY)") from exc
                except openai.RateLimitError as exc:
                    await self._failed(span, request, LlmOutcome.RATE_LIMITED, exc,
                                       started=started, reservation=reservation)
                    retry_after_s = _retry_after_s(exc)
                    await self._penalize(request.stage, retry_after_s)
                    last_error = f"429 (retry after {retry_after_s:.1f}s)"
                    delay_s = max(retry_after_s, self._backoff_s(attempt))
                except (openai.APITimeoutError, openai.APIConnectionError,
                        openai.InternalServerError) as exc:
                    outcome = (LlmOutcome.TIMEOUT if isinstance(exc, openai.APITimeoutError)
                               else LlmOutcome.SERVER_ERROR)
                    await self._failed(span, request, outcome, exc, started=started,
                                       reservation=reservation)
                    # Some servers crash on a structured-output mode they cannot compile
                    # (a 500 naming the grammar or the schema): that is the mode refused.
                    if isinstance(exc, openai.InternalServerError) and (
                            weaker := await self._step_down(request, mode, exc)) is not None:
                        mode, attempt = weaker, attempt - 1
                        continue
                    last_error, delay_s = f"{type(exc).__name__}: {exc}", self._backoff_s(attempt)
                    # No connection at all (a timeout is a slow provider, not that): quick
                    # retries bounded in time, not the attempts (reachability.py).
                    if not isinstance(exc, openai.APITimeoutError) and (
                            retry := self._reach.retry(request.stage, exc, connect_tries + 1)):
                        connect_tries, attempt, last_error, delay_s = (connect_tries + 1,
                                                                       attempt - 1, *retry)
                except openai.APIStatusError as exc:
                    await self._failed(span, request, LlmOutcome.REJECTED, exc,
                                       started=started, reservation=reservation)
                    weaker = await self._step_down(request, mode, exc)
                    if weaker is None:
                        raise PermanentStageError(f"{request.stage}: the LLM provider "
                                                  f"rejected the request ({exc.status_code})"
                                                  f": {exc}") from exc
                    # The mode was refused, not the request: at once, and not an attempt.
                    mode, attempt = weaker, attempt - 1
                    continue
                else:
                    genai.record_reply(span, response_model=result.model,
                                       input_tokens=result.prompt_tokens,
                                       output_tokens=result.completion_tokens,
                                       finish_reason=result.finish_reason)
                    await self._settle(request.stage, reservation,
                                       result.prompt_tokens + result.completion_tokens)
                    return result
            log.warning("llm_call_retry", stage=request.stage, model=model,
                        attempt=attempt + connect_tries, error=last_error,
                        delay_s=round(delay_s, 3))
            if attempt < self.settings.max_attempts:
                await asyncio.sleep(delay_s)
        raise LlmUnavailableError(f"{request.stage}: the LLM provider at "
                                  f"{redact_url(self.settings.base_url)} failed "
                                  f"{self.settings.max_attempts} times; last: {last_error}",
                                  retry_after_s=self.settings.backoff_max_s)

    async def _send(self, request: ChatRequest, usage: UsageMeter, mode: OutputMode,
                    reader: StreamReader | None, attempt: CallAttempt) -> ChatResult:
        """One attempt's request and its reply: whole, or streamed through ``reader``."""
        arguments, timeout_s = self._arguments(request, mode), self._timeout_s(usage)
        if reader is not None:
            return await reader.read(arguments, timeout_s, attempt)
        response = await self._client.chat.completions.create(**arguments, timeout=timeout_s)
        return self._answered(request, usage, response, started=attempt.started,
                              waited_s=attempt.waited_s, attempt=attempt.number,
                              repair=attempt.repair)

    async def _admitted(self, stage: str, estimate: int) -> Reservation:
        """The rate limiter's admission of one attempt; none, and no reservation, while
        the provider is held unreachable (``LlmUnavailableError``: no call is sent)."""
        self._reach.check(stage)
        reservation = await self._limiter.acquire(self.settings.model, estimate)
        self._observer.observe_wait(stage, self.settings.model, reservation.waited_s)
        return reservation

    async def _first_mode(self, request: ChatRequest) -> OutputMode:
        if request.response_format is not ResponseFormat.JSON:
            return OutputMode.PROMPT
        mode = await self._modes.mode_for_json()
        # No declared shape: json_object is what is sent, so a refusal is of that.
        return (OutputMode.JSON_OBJECT if mode is OutputMode.JSON_SCHEMA
                and request.shape is None else mode)

    async def _step_down(self, request: ChatRequest, mode: OutputMode,
                         exc: openai.APIStatusError) -> OutputMode | None:
        """The next output mode when ``exc`` refuses this one (remembered, counted)."""
        weaker = await self._modes.step_down(request.stage, mode, exc.status_code, str(exc))
        if weaker is not None:
            self._observer.observe_reply_fix(request.stage, self.settings.model,
                                             ReplyFix.MODE_REFUSED)
        return weaker

    async def _line_step_down(self, request: ChatRequest, mode: OutputMode, status: int,
                              message: str) -> OutputMode | None:
        """A batch line's refusal, read as a synchronous one is (``_step_down``)."""
        weaker = await self._modes.step_down(request.stage, mode, status, message)
        if weaker is not None:
            self._observer.observe_reply_fix(request.stage, self.settings.model,
                                             ReplyFix.MODE_REFUSED)
        return weaker

    def batch_desk(self) -> BatchDesk:
        """The provider's Batch API over this client's connection, its results stored
        where this client's calls in batch mode read them."""
        return BatchDesk(ProviderBatches(self._client), self._batch.lines,
                         model=self.settings.model,
                         prices=batch_prices(self.settings.prices,
                                             self.settings.batch_discount),
                         observer=self._observer)

    def _answered(self, request: ChatRequest, usage: UsageMeter, response: Any, *,
                  started: float, waited_s: float, attempt: int, repair: bool) -> ChatResult:
        self._reach.connected()  # an answer: whatever stretch without one is over
        model = self.settings.model
        duration_s = time.perf_counter() - started
        prompt_tokens = response.usage.prompt_tokens if response.usage else 0
        completion_tokens = response.usage.completion_tokens if response.usage else 0
        cost = self.settings.prices.cost_of(prompt_tokens, completion_tokens)
        self._observer.observe_request(request.stage, model, LlmOutcome.OK, duration_s,
                                       prompt_tokens=prompt_tokens,
                                       completion_tokens=completion_tokens, cost=cost)
        choice = response.choices[0] if response.choices else None
        finish_reason = getattr(choice, "finish_reason", None)
        usage.record_call(request.stage, prompt_tokens=prompt_tokens,
                          completion_tokens=completion_tokens, waited_s=waited_s,
                          retries=attempt - 1, cost=cost, repair=repair,
                          truncated=finish_reason == "length")
        log.debug("llm_call_finished", stage=request.stage, model=model, attempt=attempt,
                  duration_s=round(duration_s, 3), prompt_tokens=prompt_tokens,
                  completion_tokens=completion_tokens, finish_reason=finish_reason)
        # ``reasoning_content`` (a reasoning model's separate field) is never the answer.
        content = message_text(choice.message.content if choice is not None else None)
        return ChatResult(content=content, prompt_tokens=prompt_tokens,
                          completion_tokens=completion_tokens, cached=False,
                          waited_s=waited_s, attempts=attempt, finish_reason=finish_reason,
                          model=getattr(response, "model", None) or None)

    def _timeout_s(self, usage: UsageMeter) -> float:
        deadline = usage.deadline
        return (self.settings.timeout_s if deadline is None
                else deadline.call_timeout(self.settings.timeout_s))

    async def _failed(self, span: SpanLike, request: ChatRequest, outcome: LlmOutcome,
                      exc: BaseException, *, started: float, reservation: Reservation) -> None:
        """A request that failed: on its span, to the observer, and its reservation
        given back."""
        genai.record_failure(span, exc)
        self._observer.observe_request(request.stage, self.settings.model, outcome,
                                       time.perf_counter() - started)
        await self._settle(request.stage, reservation, 0)

    def _arguments(self, request: ChatRequest, mode: OutputMode) -> dict[str, Any]:
        arguments: dict[str, Any] = {"model": self.settings.model,
                                     "messages": request.as_messages(),
                                     "temperature": request.temperature}
        if request.max_tokens is not None:
            arguments["max_tokens"] = request.max_tokens
        if request.seed is not None:
            arguments["seed"] = request.seed
        if request.response_format is ResponseFormat.JSON:
            asked = response_format(mode, request.stage, request.shape)
            if asked is not None:
                arguments["response_format"] = asked
        return arguments

    def _backoff_s(self, attempt: int) -> float:
        return full_jitter_s(attempt, self.settings.backoff_base_s, self.settings.backoff_max_s)


def _retry_after_s(exc: openai.APIStatusError, default_s: float = 1.0) -> float:
    found = retry_after_s(exc.response.headers if exc.response is not None else None)
    return default_s if found is None else found
