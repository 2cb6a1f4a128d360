"""What both LLM rate limiters share: the limits, the GCRA arithmetic and a reservation.

``ratelimit.InProcessRateLimiter`` keeps the budgets' state in memory and
``ratelimit_redis.RedisRateLimiter`` in Redis (the same arithmetic as Lua scripts);
both are built from the values here, so neither imports the other.

Algorithm: each budget (requests, tokens) is a GCRA — the "virtual scheduling" form
of a leaky bucket — whose state is one number, the theoretical arrival time ``tat``
(when everything admitted so far has been paid for at the sustained rate). With
emission interval ``T`` and capacity ``C = burst * T``, a call of cost ``n`` is
admitted at ``now`` when ``tat + n*T - now <= C``; then
``tat = max(tat, now) + n*T``. A call is admitted only when both budgets (and any
``Retry-After`` block) admit it, and only then are both updated, so a call refused
by one budget never consumes the other.

Why no sliding window is ever overrun: take any admissions inside a window of
length ``Wm = 60 s + margin_s`` ending with the admission at ``s``, the first at
``u > s - Wm``. Each admission raises ``tat`` by its cost times ``T`` from at least
its own time, so just after ``s``, ``tat >= u + N*T > s - Wm + N*T``, where ``N``
is the total cost in the window; the admission test bounds ``tat <= s + C``. Hence
``N*T < Wm + C``. Choosing ``T = Wm / (limit - burst + 1)`` gives
``N < limit + 1``: at most ``limit`` in any window of ``Wm`` seconds, burst
included. The burst is thus taken out of the sustained rate, which is
``(limit - burst + 1)`` per ``Wm`` seconds — 96 % of 600/min with the defaults.
The extra ``margin_s`` makes the guarantee hold for the server's 60 s window even
when requests reach it with up to ``margin_s`` of varying latency.

The test compares the stored ``tat`` itself (not ``max(tat, now)``), so a call
costing more tokens than the burst is still admitted once the budget has been idle
long enough for the bound above to hold. A call estimated above
``tokens_per_minute`` reserves exactly ``tokens_per_minute`` (no single call can
ever fit otherwise): it waits for a fully idle minute, then goes alone.

``reconcile`` moves ``tat`` by ``(actual - reserved) * T``. Taking more is always
safe. Giving back is limited so that ``tat`` never falls below what the admissions
made after the reservation imply on their own (at most the last admission time
plus their total cost): those admissions may have used the room the give-back
would open. So tokens come back in full when nothing was admitted since the
reservation, and partly (possibly not at all) when many calls went in meanwhile —
the price of a one-number state that never overruns a window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hopindex.core.errors import ConfigError, InvalidInputError

WINDOW_S = 60.0
# The shortest sleep between attempts: a wake-up a hair early must not spin.
MIN_SLEEP_S = 0.001


@dataclass(frozen=True, slots=True)
class RateLimits:
    """What a provider allows for one model; ``None`` means unlimited."""

    requests_per_minute: int | None
    tokens_per_minute: int | None = None
    # A burst of a few requests absorbs wake-up lateness (scheduling, Redis round
    # trips) without losing slots, yet each unit of burst is taken out of the
    # sustained rate to keep every window within the limit (module docstring):
    # 3 costs 2 requests a minute. Pacing this tight also satisfies providers that
    # enforce a per-minute limit as per-second ones.
    burst_requests: int = 3
    # None: 1/20 of tokens_per_minute (3 s of budget), enough for a typical call
    # to go without waiting for idle time, at 5 % of the sustained token rate.
    burst_tokens: int | None = None
    # Varying latency between admission and arrival at the provider can squeeze
    # requests admitted 60 s apart into the provider's window; 2 s of margin
    # covers that at the cost of 3 % of the rate.
    margin_s: float = 2.0

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute", "burst_tokens"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"rate limit {name} must be positive or unset, got {value}")
        if self.burst_requests <= 0:
            raise ConfigError(f"rate limit burst_requests must be positive, "
                              f"got {self.burst_requests}")
        if self.requests_per_minute is not None and self.burst_requests > self.requests_per_minute:
            raise ConfigError(f"rate limit burst_requests ({self.burst_requests}) exceeds "
                              f"requests_per_minute ({self.requests_per_minute})")
        if (self.burst_tokens is not None and self.tokens_per_minute is not None
                and self.burst_tokens > self.tokens_per_minute):
            raise ConfigError(f"rate limit burst_tokens ({self.burst_tokens}) exceeds "
                              f"tokens_per_minute ({self.tokens_per_minute})")
        if not (self.margin_s >= 0 and math.isfinite(self.margin_s)):
            raise ConfigError(f"rate limit margin_s must be a non-negative number, "
                              f"got {self.margin_s}")

    def request_budget(self) -> Gcra | None:
        if self.requests_per_minute is None:
            return None
        return Gcra.for_limit(self.requests_per_minute, self.burst_requests, self.margin_s)

    def token_budget(self) -> Gcra | None:
        if self.tokens_per_minute is None:
            return None
        burst = self.burst_tokens or max(1, self.tokens_per_minute // 20)
        return Gcra.for_limit(self.tokens_per_minute, burst, self.margin_s)


@dataclass(frozen=True, slots=True)
class Gcra:
    """One budget's constants; the arithmetic is pure so it is tested with any clock."""

    interval_s: float  # T: the sustained cost of one unit
    capacity_s: float  # C = burst * T
    limit: int  # costs are capped here: more can never fit in a window
    horizon_s: float  # Wm: how long past ``tat`` the state still constrains anything

    @classmethod
    def for_limit(cls, limit: int, burst: int, margin_s: float) -> Gcra:
        horizon = WINDOW_S + margin_s
        interval = horizon / (limit - burst + 1)
        return cls(interval_s=interval, capacity_s=burst * interval, limit=limit,
                   horizon_s=horizon)

    def cost(self, units: int) -> int:
        return min(units, self.limit)

    def delay(self, tat: float | None, now: float, cost: int) -> float:
        """Seconds until ``cost`` is admissible; ``<= 0`` means now."""
        if tat is None:
            return -math.inf
        return tat + cost * self.interval_s - self.capacity_s - now

    def admit(self, tat: float | None, now: float, cost: int) -> float:
        """The new ``tat`` after admitting ``cost`` (or charging it after the fact)."""
        base = now if tat is None else max(tat, now)
        return base + cost * self.interval_s

    def give_back(self, tat: float, units: int, floor: float) -> float:
        """``tat`` after returning ``units``, never below ``floor`` (capped at ``tat``)."""
        return max(tat - units * self.interval_s, min(tat, floor))

    def later_floor(self, last_s: float, total: int, total_at_reservation: int) -> float:
        """What admissions after a reservation imply for ``tat`` on their own, at most.

        They all happened by ``last_s`` and cost ``total - total_at_reservation``.
        """
        if total <= total_at_reservation:
            return -math.inf
        return last_s + (total - total_at_reservation) * self.interval_s


@dataclass(frozen=True, slots=True)
class Reservation:
    """An admitted call: what it reserved and how long it waited for admission.

    ``waited_s`` is the time the call was held back by a budget — the requests or
    tokens per minute, or a provider's Retry-After hold (the provider saying its own
    budget is spent) — and nothing else: with no limit configured and no 429 it is 0.
    """

    key: str
    reserved_tokens: int
    waited_s: float
    # The token budget's cumulative cost just after this admission: reconcile uses
    # it to bound how much may be given back.
    token_total: int = 0


def check_tokens(estimated_tokens: int) -> None:
    if estimated_tokens < 0:
        raise InvalidInputError(f"must not be negative, got {estimated_tokens}",
                                where="estimated_tokens")
