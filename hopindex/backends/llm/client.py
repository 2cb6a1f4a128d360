"""One async client over the OpenAI protocol, used by every LLM-driven method.

Around each call, in this order (docs/architecture.md): response cache → the job's
LLM budget, when it has one (reserve an estimate; a refusal pauses the job:
``BudgetExhaustedError``) → rate limiter (reserve an estimate) → the call with a
timeout → retries with jittered exponential backoff on 429/5xx/timeouts/connection
errors (a 429 holds back every process sharing the limiter for its Retry-After) →
reconcile the reservation with the reported usage → usage accounting. JSON replies are
validated by the caller's parser, with one repair attempt. Each step is reported
to an :class:`LlmObserver` (metrics), when one is given.

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
import enum
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import openai

from hopindex.backends.llm.budget import LlmBudget
from hopindex.backends.llm.cache import ResponseCache, cache_key
from hopindex.backends.llm.credentials import sdk_api_key
from hopindex.backends.llm.observer import (
    CacheOperation,
    LlmObserver,
    LlmOutcome,
    NullLlmObserver,
)
from hopindex.backends.llm.ratelimit import RateLimiter, Reservation
from hopindex.backends.llm.retry import full_jitter_s, retry_after_s
from hopindex.backends.llm.usage import LlmPrices, UsageMeter
from hopindex.core.budget import BudgetCharge, BudgetScope
from hopindex.core.errors import (
    BackendError,
    BudgetExhaustedError,
    ConfigError,
    LlmAuthenticationError,
    LlmOutputError,
    LlmUnavailableError,
    PermanentStageError,
)
from hopindex.core.logging import get_logger
from hopindex.core.redact import redact_url

log = get_logger(__name__)

T = TypeVar("T")

# Characters per token for estimates before a call; the provider's usage corrects it.
CHARS_PER_TOKEN = 4
DEFAULT_COMPLETION_ESTIMATE = 256


class ResponseFormat(enum.StrEnum):
    TEXT = "text"
    JSON = "json"


@dataclass(frozen=True, slots=True)
class LlmSettings:
    base_url: str
    model: str
    api_key: str
    timeout_s: float = 60.0
    max_attempts: int = 6
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    # Prices each answered call as it is recorded (job records, query usage, metrics).
    prices: LlmPrices = field(default_factory=LlmPrices)

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigError("HOPINDEX_LLM_MODEL must name a model")
        if self.timeout_s <= 0 or self.max_attempts < 1:
            raise ConfigError("LLM timeout must be positive and attempts at least 1")


@dataclass(frozen=True, slots=True)
class ChatRequest:
    stage: str
    messages: tuple[tuple[str, str], ...]  # (role, content)
    temperature: float = 0.0
    max_tokens: int | None = None
    response_format: ResponseFormat = ResponseFormat.TEXT
    seed: int | None = None

    def as_messages(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]

    def estimated_tokens(self) -> int:
        return self.estimated_prompt_tokens() + self.estimated_completion_tokens()

    def estimated_prompt_tokens(self) -> int:
        return sum(len(content) for _, content in self.messages) // CHARS_PER_TOKEN + 1

    def estimated_completion_tokens(self) -> int:
        return self.max_tokens or DEFAULT_COMPLETION_ESTIMATE


@dataclass(frozen=True, slots=True)
class ChatResult:
    content: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    waited_s: float = 0.0
    attempts: int = 0


class LlmClient:
    def __init__(self, settings: LlmSettings, limiter: RateLimiter,
                 cache: ResponseCache | None = None, *,
                 client: openai.AsyncOpenAI | None = None,
                 observer: LlmObserver | None = None,
                 budget: LlmBudget | None = None) -> None:
        self.settings = settings
        self._limiter = limiter
        self._cache = cache
        self._budget = budget
        self._observer: LlmObserver = observer or NullLlmObserver()
        # Our own retry loop decides, with the shared limiter; the SDK's would not.
        self._client = client or openai.AsyncOpenAI(
            base_url=settings.base_url, api_key=sdk_api_key(settings.api_key), max_retries=0,
            timeout=settings.timeout_s)

    async def close(self) -> None:
        await self._client.close()
        if self._cache is not None:
            await self._cache.close()
        if self._budget is not None:
            await self._budget.close()
        await self._limiter.close()

    async def forget_budget(self, job_id: str) -> None:
        """Drop a finished job's budget account."""
        if self._budget is not None:
            await self._budget.forget(job_id)

    async def complete(self, request: ChatRequest, usage: UsageMeter) -> ChatResult:
        key = self._key(request)
        cached = await self._cached(request.stage, key)
        if cached is not None:
            usage.record_cache_hit(request.stage, cost=self.settings.prices.cost_of(0, 0))
            return ChatResult(content=cached, prompt_tokens=0, completion_tokens=0,
                              cached=True)
        result = await self._call(request, usage)
        # An empty reply is the model failing, not an answer: caching it would make
        # every later run of the same prompt fail the same way for free.
        if request.response_format is ResponseFormat.TEXT and result.content.strip():
            await self._store(request.stage, key, result.content)
        return result

    async def complete_json(self, request: ChatRequest, parse: Callable[[Any], T],
                            usage: UsageMeter) -> T:
        """The parsed reply; a reply ``parse`` rejects gets one repair attempt, then
        ``LlmOutputError`` (a permanent failure for that document or entity)."""
        request = replace(request, response_format=ResponseFormat.JSON)
        key = self._key(request)
        found = _parsed(await self._cached(request.stage, key), parse)
        if found is not None:
            usage.record_cache_hit(request.stage, cost=self.settings.prices.cost_of(0, 0))
            return found[0]
        result = await self._call(request, usage)
        try:
            value = parse(json.loads(result.content))
            content = result.content
        except (ValueError, KeyError, TypeError) as first_error:
            repair = replace(request, messages=(
                *request.messages, ("assistant", result.content),
                ("user", f"That reply was not valid JSON of the requested shape "
                         f"({first_error}). Reply with the corrected JSON only.")))
            repaired = await self._call(repair, usage)
            try:
                value = parse(json.loads(repaired.content))
                content = repaired.content
            except (ValueError, KeyError, TypeError) as exc:
                raise LlmOutputError(f"{request.stage}: model reply is not the expected "
                                     f"JSON after one repair attempt: {exc}") from exc
        await self._store(request.stage, key, content)
        return value

    async def _cached(self, stage: str, key: str) -> str | None:
        """The cached reply, or None on a miss.

        A cache that cannot answer counts as a miss: the call it would have saved can
        still be made and gives the same reply, whereas retrying the task would throw
        away the paid replies of the other calls of its batch (whose writes fail in the
        same outage) and stall every task on a cache that may be broken for good (a
        corrupt file). The cost, a repeat of a call already paid for, shows in the
        log and in ``hopindex_llm_cache_errors_total``.
        """
        if self._cache is None:
            return None
        try:
            cached = await self._cache.get_response(key)
        except BackendError as exc:
            self._observer.observe_cache_error(stage, CacheOperation.GET)
            log.warning("llm_cache_read_failed", stage=stage, error=str(exc))
            return None
        self._observer.observe_cache(stage, hit=cached is not None)
        return cached

    async def _store(self, stage: str, key: str, content: str) -> None:
        """Cache a reply; one that cannot be stored (a full disk, Redis away) is kept by
        the caller all the same: it was paid for, and it is the right answer."""
        if self._cache is None:
            return
        try:
            await self._cache.put_response(key, content)
        except BackendError as exc:
            self._observer.observe_cache_error(stage, CacheOperation.PUT)
            log.warning("llm_cache_write_failed", stage=stage, error=str(exc))

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

    async def _call(self, request: ChatRequest, usage: UsageMeter) -> ChatResult:
        """One paid request: reserved against the job's budget first, when it has one."""
        scope = usage.budget
        if scope is None or self._budget is None or not scope.limits.is_limited:
            return await self._attempts(request, usage)
        charge = self._estimate_charge(request)
        await self._reserve_budget(request, usage, scope, charge)
        spent = BudgetCharge(0)
        try:
            result = await self._attempts(request, usage)
            spent = BudgetCharge(result.prompt_tokens + result.completion_tokens,
                                 self.settings.prices.cost_of(
                                     result.prompt_tokens, result.completion_tokens) or 0.0)
            return result
        finally:
            await self._settle_budget(request.stage, scope, charge, spent)

    def _estimate_charge(self, request: ChatRequest) -> BudgetCharge:
        prompt, completion = (request.estimated_prompt_tokens(),
                              request.estimated_completion_tokens())
        return BudgetCharge(prompt + completion,
                            self.settings.prices.cost_of(prompt, completion) or 0.0)

    async def _reserve_budget(self, request: ChatRequest, usage: UsageMeter,
                              scope: BudgetScope, charge: BudgetCharge) -> None:
        """Hold ``charge`` on the job's budget, or raise ``BudgetExhaustedError`` with the
        figures. A budget store that cannot answer raises its own retryable error: the
        call is not made unchecked."""
        assert self._budget is not None
        first = usage.refusal
        if first is not None:
            raise BudgetExhaustedError(str(first), job_id=first.job_id, figures=first.figures)
        if await self._budget.reserve(scope.job_id, scope.limits, charge):
            return
        status = await self._budget.status(scope.job_id, scope.limits)
        reason = status.refusal(charge)
        log.warning("llm_budget_refused", stage=request.stage, job_id=scope.job_id,
                    reason=reason)
        refused = BudgetExhaustedError(
            reason, job_id=scope.job_id,
            figures={**status.as_dict(), "stage": request.stage,
                     "next_call": {"tokens": charge.tokens, "cost": charge.cost}})
        usage.refusal = refused
        raise refused

    async def _settle_budget(self, stage: str, scope: BudgetScope, reserved: BudgetCharge,
                             spent: BudgetCharge) -> None:
        """Swap the hold for what the call used. Bookkeeping, like the limiter's: a store
        that cannot take it leaves the hold counted (the budget errs on the safe side)
        and never costs the reply."""
        assert self._budget is not None
        try:
            await self._budget.settle(scope.job_id, reserved, spent)
        except BackendError as exc:
            log.warning("llm_budget_settle_failed", stage=stage, job_id=scope.job_id,
                        error=str(exc))

    async def _attempts(self, request: ChatRequest, usage: UsageMeter) -> ChatResult:
        model = self.settings.model
        estimate = request.estimated_tokens()
        waited_s = 0.0
        last_error = ""
        for attempt in range(1, self.settings.max_attempts + 1):
            reservation = await self._limiter.acquire(model, estimate)
            waited_s += reservation.waited_s
            self._observer.observe_wait(request.stage, model, reservation.waited_s)
            started = time.perf_counter()
            try:
                response = await self._client.chat.completions.create(
                    **self._arguments(request))
            except openai.AuthenticationError as exc:
                self._observe_failure(request, LlmOutcome.UNAUTHORIZED, started)
                await self._settle(request.stage, reservation, 0)
                refused = ("refused the API key" if self.settings.api_key else
                           "asks for an API key and none is set")
                raise LlmAuthenticationError(
                    f"the LLM provider at {redact_url(self.settings.base_url)} {refused} "
                    "(OPENAI_API_KEY / HOPINDEX_LLM_API_KEY)") from exc
            except openai.RateLimitError as exc:
                self._observe_failure(request, LlmOutcome.RATE_LIMITED, started)
                await self._settle(request.stage, reservation, 0)
                retry_after_s = _retry_after_s(exc)
                await self._penalize(request.stage, retry_after_s)
                last_error = f"429 (retry after {retry_after_s:.1f}s)"
                delay_s = max(retry_after_s, self._backoff_s(attempt))
            except (openai.APITimeoutError, openai.APIConnectionError,
                    openai.InternalServerError) as exc:
                self._observe_failure(request, LlmOutcome.TIMEOUT if isinstance(
                    exc, openai.APITimeoutError) else LlmOutcome.SERVER_ERROR, started)
                await self._settle(request.stage, reservation, 0)
                last_error = f"{type(exc).__name__}: {exc}"
                delay_s = self._backoff_s(attempt)
            except openai.APIStatusError as exc:
                self._observe_failure(request, LlmOutcome.REJECTED, started)
                await self._settle(request.stage, reservation, 0)
                raise PermanentStageError(f"{request.stage}: the LLM provider rejected the "
                                          f"request ({exc.status_code}): {exc}") from exc
            else:
                duration_s = time.perf_counter() - started
                prompt_tokens = response.usage.prompt_tokens if response.usage else 0
                completion_tokens = response.usage.completion_tokens if response.usage else 0
                cost = self.settings.prices.cost_of(prompt_tokens, completion_tokens)
                self._observer.observe_request(request.stage, model, LlmOutcome.OK, duration_s,
                                               prompt_tokens=prompt_tokens,
                                               completion_tokens=completion_tokens, cost=cost)
                await self._settle(request.stage, reservation, prompt_tokens + completion_tokens)
                usage.record_call(request.stage, prompt_tokens=prompt_tokens,
                                  completion_tokens=completion_tokens, waited_s=waited_s,
                                  retries=attempt - 1, cost=cost)
                log.debug("llm_call_finished", stage=request.stage, model=model,
                          attempt=attempt, duration_s=round(duration_s, 3),
                          prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
                content = response.choices[0].message.content or ""
                return ChatResult(content=content, prompt_tokens=prompt_tokens,
                                  completion_tokens=completion_tokens, cached=False,
                                  waited_s=waited_s, attempts=attempt)
            log.warning("llm_call_retry", stage=request.stage, model=model, attempt=attempt,
                        error=last_error, delay_s=round(delay_s, 3))
            if attempt < self.settings.max_attempts:
                await asyncio.sleep(delay_s)
        raise LlmUnavailableError(f"{request.stage}: the LLM provider failed "
                                  f"{self.settings.max_attempts} times; last: {last_error}",
                                  retry_after_s=self.settings.backoff_max_s)

    def _observe_failure(self, request: ChatRequest, outcome: LlmOutcome,
                         started: float) -> None:
        self._observer.observe_request(request.stage, self.settings.model, outcome,
                                       time.perf_counter() - started)

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {"model": self.settings.model,
                                     "messages": request.as_messages(),
                                     "temperature": request.temperature}
        if request.max_tokens is not None:
            arguments["max_tokens"] = request.max_tokens
        if request.seed is not None:
            arguments["seed"] = request.seed
        if request.response_format is ResponseFormat.JSON:
            arguments["response_format"] = {"type": "json_object"}
        return arguments

    def _backoff_s(self, attempt: int) -> float:
        return full_jitter_s(attempt, self.settings.backoff_base_s, self.settings.backoff_max_s)


def _parsed(cached: str | None, parse: Callable[[Any], T]) -> tuple[T] | None:
    """The cached reply parsed (in a tuple: a parser may return None), or None when
    there is none or it no longer parses (a cache written by older code: ask again)."""
    if cached is None:
        return None
    try:
        return (parse(json.loads(cached)),)
    except (ValueError, KeyError, TypeError):
        return None


def _retry_after_s(exc: openai.APIStatusError, default_s: float = 1.0) -> float:
    found = retry_after_s(exc.response.headers if exc.response is not None else None)
    return default_s if found is None else found
