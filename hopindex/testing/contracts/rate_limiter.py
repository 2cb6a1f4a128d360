"""The ``RateLimiter`` contract: what every LLM rate limiter must do, in real time.

The tests run on the limiter's own clock (a process's, or Redis's), with rates high
enough that every wait is well under two seconds; bounds on waits leave room for a
busy machine's scheduling lateness, never for a wait shorter than the budget asks.
Each test opens its limiters inside its own event loop through ``make_limiter``
(a limiter may belong to the loop it was opened in) and uses keys built from the
``key`` fixture, fresh for the test.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import pytest

from hopindex.backends.llm.ratelimit import RateLimiter, RateLimits, Reservation
from hopindex.core.errors import InvalidInputError

T = TypeVar("T")

MakeLimiter = Callable[[RateLimits], RateLimiter]


def max_in_window(times: Sequence[float], window: float,
                  weights: Sequence[int] | None = None) -> int:
    """The largest total admitted in any half-open window of ``window`` seconds."""
    order = sorted(range(len(times)), key=lambda i: times[i])
    ts = [times[i] for i in order]
    ws = [1] * len(ts) if weights is None else [weights[i] for i in order]
    best = running = start = 0
    for end, t in enumerate(ts):
        running += ws[end]
        while t - ts[start] >= window:
            running -= ws[start]
            start += 1
        best = max(best, running)
    return best


def run_with(make_limiter: MakeLimiter, limits: RateLimits,
             scenario: Callable[[RateLimiter], Awaitable[T]]) -> T:
    """Open a limiter in a fresh event loop, run ``scenario`` on it and close it."""
    async def main() -> T:
        limiter = make_limiter(limits)
        try:
            return await scenario(limiter)
        finally:
            await limiter.close()

    return asyncio.run(main())


class RateLimiterContract:
    """Subclass with a ``make_limiter`` fixture (limits → a limiter sharing nothing with
    other tests' keys); override ``key`` to clean up what the limiter keeps per key
    (every key a test uses starts with it)."""

    @pytest.fixture
    def make_limiter(self) -> MakeLimiter:
        raise NotImplementedError("the adapter's test class provides the make_limiter fixture")

    @pytest.fixture
    def key(self) -> str:
        return f"contract-model-{uuid.uuid4().hex[:12]}"

    def test_methods_are_coroutines(self, make_limiter: MakeLimiter) -> None:
        """Every ``RateLimiter`` method exists on the adapter and is async, as the LLM
        client awaits them."""
        limits = RateLimits(requests_per_minute=60)

        async def kind(limiter: RateLimiter) -> type:
            return type(limiter)

        limiter_type = run_with(make_limiter, limits, kind)
        for name in ("acquire", "reconcile", "penalize", "close"):
            assert name in RateLimiter.__dict__
            assert inspect.iscoroutinefunction(getattr(limiter_type, name)), name

    def test_within_budget_does_not_wait(self, make_limiter: MakeLimiter, key: str) -> None:
        """Calls within the burst and the token budget are admitted at once, each
        reservation naming its key, its tokens and a wait of exactly 0."""
        limits = RateLimits(requests_per_minute=600, tokens_per_minute=100_000)

        async def scenario(limiter: RateLimiter) -> list[Reservation]:
            return [await limiter.acquire(key, 100) for _ in range(limits.burst_requests)]

        for reservation in run_with(make_limiter, limits, scenario):
            assert (reservation.key, reservation.reserved_tokens) == (key, 100)
            assert reservation.waited_s == 0.0

    def test_no_limit_is_no_wait_under_contention(self, make_limiter: MakeLimiter,
                                                  key: str) -> None:
        """With no budget configured and no Retry-After hold, sixty-four concurrent calls
        each report a wait of exactly 0: the limiter's own bookkeeping is not a wait."""
        limits = RateLimits(requests_per_minute=None)

        async def scenario(limiter: RateLimiter) -> list[Reservation]:
            return await asyncio.gather(*(limiter.acquire(key, 500) for _ in range(64)))

        assert {r.waited_s for r in run_with(make_limiter, limits, scenario)} == {0.0}

    def test_over_budget_waits_and_reports_it(self, make_limiter: MakeLimiter,
                                              key: str) -> None:
        """At 120 requests/min with no burst, three concurrent calls are admitted 0.5 s
        apart, and each reservation reports the wait the budget imposed on it."""
        limits = RateLimits(requests_per_minute=120, burst_requests=1, margin_s=0.0)

        async def scenario(limiter: RateLimiter) -> list[float]:
            found = await asyncio.gather(*(limiter.acquire(key, 10) for _ in range(3)))
            return sorted(r.waited_s for r in found)

        first, second, third = run_with(make_limiter, limits, scenario)
        assert first == 0.0
        assert 0.45 <= second <= 0.8
        assert 0.95 <= third <= 1.4

    def test_estimate_above_the_limit_reserves_the_limit(self, make_limiter: MakeLimiter,
                                                         key: str) -> None:
        """A call estimated above tokens/min reserves exactly the limit (more could never
        fit in a minute), and a fresh budget admits it at once."""
        limits = RateLimits(requests_per_minute=None, tokens_per_minute=1_000, margin_s=0.0)

        async def scenario(limiter: RateLimiter) -> Reservation:
            return await limiter.acquire(key, 50_000)

        reservation = run_with(make_limiter, limits, scenario)
        assert reservation.reserved_tokens == 1_000
        assert reservation.waited_s == 0.0

    def test_reconcile_gives_back_and_charges_more(self, make_limiter: MakeLimiter,
                                                   key: str) -> None:
        """Reconciling a full-burst call to 0 tokens lets the next one in at once (else it
        would wait half a second); reconciling one to twice its estimate makes the next
        wait for those tokens (a second instead of half)."""
        limits = RateLimits(requests_per_minute=None, tokens_per_minute=120_000,
                            burst_tokens=1_000, margin_s=0.0)
        budget = limits.token_budget()
        assert budget is not None
        charged_s = 2_000 * budget.interval_s

        async def scenario(limiter: RateLimiter) -> list[float]:
            first = await limiter.acquire(key, 1_000)
            await limiter.reconcile(first, 0)
            second = await limiter.acquire(key, 1_000)
            await limiter.reconcile(second, 2_000)
            third = await limiter.acquire(key, 1_000)
            return [first.waited_s, second.waited_s, third.waited_s]

        first, second, third = run_with(make_limiter, limits, scenario)
        assert first == 0.0
        assert second == 0.0
        assert charged_s - 0.1 <= third <= charged_s + 0.5

    def test_penalize_holds_the_key_until_retry_after(self, make_limiter: MakeLimiter,
                                                      key: str) -> None:
        """After a 429 with Retry-After 0.6 s no caller of that key is admitted sooner; a
        shorter Retry-After never shortens the hold; other keys are not held; and a
        Retry-After of 0, below 0 or not finite holds nobody."""
        limits = RateLimits(requests_per_minute=6_000)
        other, unheld = f"{key}-other", f"{key}-unheld"

        async def scenario(limiter: RateLimiter) -> tuple[float, float, float]:
            await limiter.acquire(key, 10)
            await limiter.penalize(key, 0.6)
            await limiter.penalize(key, 0.1)
            for retry_after_s in (0.0, -1.0, math.inf, math.nan):
                await limiter.penalize(unheld, retry_after_s)
            free = (await limiter.acquire(other, 10)).waited_s
            ignored = (await limiter.acquire(unheld, 10)).waited_s
            held = (await limiter.acquire(key, 10)).waited_s
            return free, ignored, held

        free, ignored, held = run_with(make_limiter, limits, scenario)
        assert free == 0.0
        assert ignored == 0.0
        assert 0.45 <= held <= 1.0

    def test_negative_token_counts_are_refused(self, make_limiter: MakeLimiter,
                                               key: str) -> None:
        """A negative estimate or actual count is a caller's bug, reported as invalid
        input before it touches the budget."""
        limits = RateLimits(requests_per_minute=60, tokens_per_minute=10_000)

        async def scenario(limiter: RateLimiter) -> None:
            with pytest.raises(InvalidInputError):
                await limiter.acquire(key, -1)
            reservation = await limiter.acquire(key, 10)
            with pytest.raises(InvalidInputError):
                await limiter.reconcile(reservation, -1)

        run_with(make_limiter, limits, scenario)

    def test_concurrent_requests_never_exceed_the_budget(self, make_limiter: MakeLimiter,
                                                         key: str) -> None:
        """Twenty concurrent tasks for 1.5 s at 6000 requests/min: no window holds more
        than the rate and the burst allow, yet the rate is reached."""
        limits = RateLimits(requests_per_minute=6_000, margin_s=0.0)
        budget = limits.request_budget()
        assert budget is not None
        duration_s = 1.5

        async def scenario(limiter: RateLimiter) -> list[float]:
            times: list[float] = []
            deadline = time.monotonic() + duration_s

            async def worker() -> None:
                while time.monotonic() < deadline:
                    await limiter.acquire(key, 0)
                    times.append(time.monotonic())

            await asyncio.gather(*(worker() for _ in range(20)))
            return times

        times = run_with(make_limiter, limits, scenario)
        burst = limits.burst_requests
        # +1: each admission is timed after the limiter answers, a little late.
        for window_s in (0.5, 1.0):
            assert max_in_window(times, window_s) <= math.floor(
                window_s / budget.interval_s + burst) + 1
        assert len(times) >= 0.85 * duration_s / budget.interval_s

    def test_concurrent_tokens_never_exceed_the_budget(self, make_limiter: MakeLimiter,
                                                       key: str) -> None:
        """Twenty concurrent tasks for 1.5 s, calls of 20 to 80 tokens at 60,000
        tokens/min: no window holds more tokens than the rate and the burst allow, yet
        the rate is reached."""
        limits = RateLimits(requests_per_minute=None, tokens_per_minute=60_000,
                            burst_tokens=200, margin_s=0.0)
        budget = limits.token_budget()
        assert budget is not None
        duration_s = 1.5
        rng = random.Random(5)

        async def scenario(limiter: RateLimiter) -> tuple[list[float], list[int]]:
            times: list[float] = []
            sizes: list[int] = []
            deadline = time.monotonic() + duration_s

            async def worker() -> None:
                while time.monotonic() < deadline:
                    size = rng.randint(20, 80)
                    await limiter.acquire(key, size)
                    times.append(time.monotonic())
                    sizes.append(size)

            await asyncio.gather(*(worker() for _ in range(20)))
            return times, sizes

        times, sizes = run_with(make_limiter, limits, scenario)
        # Each admission is timed after the limiter answers, up to some 50 ms late on a
        # busy machine: a window of those times may span that much more of the budget.
        for window_s in (0.5, 1.0):
            assert max_in_window(times, window_s, sizes) <= (
                (window_s + 0.05) / budget.interval_s + 200)
        assert sum(sizes) >= 0.85 * duration_s / budget.interval_s
