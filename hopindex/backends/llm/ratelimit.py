"""Rate limiting for LLM calls: requests/min and tokens/min, one budget per model.

Every LLM call goes through a :class:`RateLimiter` (docs/architecture.md)::

    limiter = rate_limiter_for(settings_url, RateLimits(requests_per_minute=600,
                                                        tokens_per_minute=200_000))
    reservation = await limiter.acquire(model, estimated_tokens=1_800)  # waits, never fails
    try:
        response = await call_provider(...)
    except ProviderRateLimited as exc:                # 429
        await limiter.penalize(model, exc.retry_after_s)
        raise
    await limiter.reconcile(reservation, response.usage.total_tokens)
    ...
    await limiter.close()

``rate_limiter_for("redis://host:6379/0", limits)`` gives a :class:`RedisRateLimiter`
(one budget shared by every process and machine using that Redis);
``rate_limiter_for("", limits)`` an :class:`InProcessRateLimiter` (embedded mode).

The algorithm, and why no provider window is ever overrun: ``ratelimit_budgets``.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

from hopindex.backends.llm.ratelimit_budgets import (
    MIN_SLEEP_S,
    WINDOW_S,
    Gcra,
    RateLimits,
    Reservation,
    check_tokens,
)
from hopindex.core.errors import ConfigError
from hopindex.core.logging import get_logger
from hopindex.core.settings import REDIS_SCHEMES

# The shared values stay importable from here: callers name the limiter's module.
__all__ = ["MIN_SLEEP_S", "WINDOW_S", "Gcra", "InProcessRateLimiter", "RateLimiter",
           "RateLimits", "Reservation", "check_tokens", "rate_limiter_for"]

log = get_logger(__name__)


class RateLimiter(Protocol):
    async def acquire(self, key: str, estimated_tokens: int) -> Reservation:
        """Wait until one call of ``estimated_tokens`` is admitted under ``key``'s budget."""
        ...

    async def reconcile(self, reservation: Reservation, actual_tokens: int) -> None:
        """Charge (or give back) the difference between actual and reserved tokens."""
        ...

    async def penalize(self, key: str, retry_after_s: float) -> None:
        """The provider answered 429: no caller sharing ``key`` is admitted before then."""
        ...

    async def close(self) -> None: ...


@dataclass(slots=True)
class _BudgetState:
    tat: float | None = None
    total: int = 0
    last_s: float = -math.inf


@dataclass(slots=True)
class _KeyState:
    requests: _BudgetState = field(default_factory=_BudgetState)
    tokens: _BudgetState = field(default_factory=_BudgetState)
    blocked_until: float = -math.inf


class InProcessRateLimiter:
    """The budgets in this process's memory: the embedded mode, one process.

    State changes happen under a ``threading.Lock`` and waiting is an
    ``asyncio.sleep`` in the caller's loop, so one instance may be shared by
    threads each running their own event loop. Waiters retry when their computed
    delay has passed; admission order among them is not FIFO.
    """

    def __init__(self, limits: RateLimits, *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.limits = limits
        self._requests = limits.request_budget()
        self._tokens = limits.token_budget()
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._keys: dict[str, _KeyState] = {}

    def _state(self, key: str) -> _KeyState:
        state = self._keys.get(key)
        if state is None:
            state = self._keys[key] = _KeyState()
        return state

    def try_acquire(self, key: str, tokens: int) -> tuple[float, int]:
        """One attempt: ``(0, token_total)`` when admitted, else ``(delay_s, 0)``."""
        with self._lock:
            now = self._clock()
            state = self._state(key)
            delay = state.blocked_until - now
            if self._requests is not None:
                delay = max(delay, self._requests.delay(state.requests.tat, now, 1))
            if self._tokens is not None:
                delay = max(delay, self._tokens.delay(state.tokens.tat, now, tokens))
            if delay > 0:
                return delay, 0
            if self._requests is not None:
                state.requests.tat = self._requests.admit(state.requests.tat, now, 1)
            if self._tokens is not None:
                budget = state.tokens
                budget.tat = self._tokens.admit(budget.tat, now, tokens)
                budget.total += tokens
                budget.last_s = now
            return 0.0, state.tokens.total

    async def acquire(self, key: str, estimated_tokens: int) -> Reservation:
        check_tokens(estimated_tokens)
        tokens = self._tokens.cost(estimated_tokens) if self._tokens else estimated_tokens
        # Only the sleeps a budget (or a Retry-After hold) imposed count as waiting: the
        # time to take the lock and decide is the limiter's own cost, not a limit's.
        waited = 0.0
        while True:
            delay, total = self.try_acquire(key, tokens)
            if delay <= 0:
                break
            asleep_since = self._clock()
            await self._sleep(max(delay, MIN_SLEEP_S))
            waited += self._clock() - asleep_since
        if waited > 0:
            log.debug("ratelimit_wait", key=key, waited_s=round(waited, 3), tokens=tokens)
        return Reservation(key=key, reserved_tokens=tokens, waited_s=waited, token_total=total)

    async def reconcile(self, reservation: Reservation, actual_tokens: int) -> None:
        check_tokens(actual_tokens)
        gcra = self._tokens
        delta = actual_tokens - reservation.reserved_tokens
        if gcra is None or delta == 0:
            return
        with self._lock:
            now = self._clock()
            budget = self._state(reservation.key).tokens
            if delta > 0:
                budget.tat = gcra.admit(budget.tat, now, delta)
                budget.total += delta
                budget.last_s = now
            elif budget.tat is not None:
                floor = gcra.later_floor(budget.last_s, budget.total, reservation.token_total)
                budget.tat = gcra.give_back(budget.tat, -delta, floor)

    async def penalize(self, key: str, retry_after_s: float) -> None:
        if not (retry_after_s > 0 and math.isfinite(retry_after_s)):
            return
        with self._lock:
            state = self._state(key)
            state.blocked_until = max(state.blocked_until, self._clock() + retry_after_s)
        log.info("ratelimit_penalized", key=key, retry_after_s=retry_after_s)

    async def close(self) -> None:
        with self._lock:
            self._keys.clear()


def rate_limiter_for(url: str | None, limits: RateLimits) -> RateLimiter:
    """A Redis-backed limiter for ``redis://``, ``rediss://`` or ``unix://``; else in-process."""
    if not url:
        return InProcessRateLimiter(limits)
    scheme = urlsplit(url).scheme
    if scheme not in REDIS_SCHEMES:
        raise ConfigError(f"rate limiter URL must use one of {', '.join(REDIS_SCHEMES)}, "
                          f"got scheme {scheme!r}")
    from hopindex.backends.llm.ratelimit_redis import RedisRateLimiter

    return RedisRateLimiter(url, limits)
