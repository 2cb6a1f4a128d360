"""The LLM rate limiters: GCRA arithmetic, then the ``RateLimiter`` contract and what each
adapter adds: the in-process limiter's pacing over simulated hours, the Redis one's
budget shared across processes."""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import subprocess
import sys
import textwrap
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from hopindex.backends.llm.ratelimit import (
    Gcra,
    InProcessRateLimiter,
    RateLimiter,
    RateLimits,
    Reservation,
    rate_limiter_for,
)
from hopindex.backends.llm.ratelimit_redis import PREFIX, RedisRateLimiter, public_url
from hopindex.core.errors import BackendUnavailableError, ConfigError
from hopindex.testing.contracts.rate_limiter import (
    MakeLimiter,
    RateLimiterContract,
    max_in_window,
)
from tests.redis_server import (  # noqa: F401  # redis_url: a re-exported fixture
    private_redis_server,
    redis_url,
    unique_key,
)
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)


class FakeTime:
    """A clock that only moves when the limiter sleeps (or the test says so)."""

    def __init__(self) -> None:
        self.now = 10_000.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


def fake_limiter(limits: RateLimits) -> tuple[InProcessRateLimiter, FakeTime]:
    fake = FakeTime()
    return InProcessRateLimiter(limits, clock=fake.clock, sleep=fake.sleep), fake


# -- pure arithmetic ---------------------------------------------------------------


def test_gcra_arithmetic_takes_the_burst_out_of_the_rate() -> None:
    """T = (60 + margin) / (limit - burst + 1); a fresh budget admits the burst at once."""
    gcra = Gcra.for_limit(600, burst=3, margin_s=2.0)
    assert gcra.interval_s == pytest.approx(62 / 598)
    assert gcra.capacity_s == pytest.approx(3 * 62 / 598)
    now, tat = 100.0, None
    assert gcra.delay(tat, now, 1) == -math.inf
    for _ in range(3):
        assert gcra.delay(tat, now, 1) <= 1e-12
        tat = gcra.admit(tat, now, 1)
    # The fourth waits exactly one interval; after idling, tat stays in the past.
    assert gcra.delay(tat, now, 1) == pytest.approx(gcra.interval_s)
    assert gcra.admit(tat, now + 50, 1) == pytest.approx(now + 50 + gcra.interval_s)
    assert gcra.cost(10_000) == 600


def test_gcra_give_back_never_goes_below_what_later_admissions_imply() -> None:
    """A give-back is exact with no later admission, and bounded by later ones otherwise."""
    gcra = Gcra.for_limit(6000, burst=100, margin_s=0.0)
    tat = 500.0
    assert gcra.give_back(tat, 100, gcra.later_floor(0.0, 7, 7)) == pytest.approx(
        tat - 100 * gcra.interval_s)
    floor = gcra.later_floor(490.0, 1_000, 400)
    assert floor == pytest.approx(490.0 + 600 * gcra.interval_s)
    assert gcra.give_back(tat, 5_000, floor) == pytest.approx(min(tat, floor))


@pytest.mark.parametrize("kwargs", [
    {"requests_per_minute": 0},
    {"requests_per_minute": -5},
    {"requests_per_minute": 10, "tokens_per_minute": 0},
    {"requests_per_minute": 10, "burst_requests": 0},
    {"requests_per_minute": 10, "burst_requests": 11},
    {"requests_per_minute": None, "tokens_per_minute": 100, "burst_tokens": 101},
    {"requests_per_minute": 10, "margin_s": -1.0},
])
def test_invalid_limits_are_config_errors(kwargs: dict[str, Any]) -> None:
    """Non-positive limits or bursts larger than the limit are refused when built."""
    with pytest.raises(ConfigError):
        RateLimits(**kwargs)


def test_rate_limiter_for_picks_by_url() -> None:
    """Empty or None means in-process, redis:// means Redis, anything else is a ConfigError."""
    limits = RateLimits(requests_per_minute=60)
    assert isinstance(rate_limiter_for(None, limits), InProcessRateLimiter)
    assert isinstance(rate_limiter_for("", limits), InProcessRateLimiter)
    limiter = rate_limiter_for("redis://127.0.0.1:1/0", limits)
    assert isinstance(limiter, RedisRateLimiter)
    run(limiter.close())
    with pytest.raises(ConfigError):
        rate_limiter_for("http://example.com", limits)


# -- in-process ---------------------------------------------------------------------


class TestInProcessRateLimiter(RateLimiterContract):
    """The contract on this process's clock, then the pacing over hours of simulated time."""

    @pytest.fixture
    def make_limiter(self) -> MakeLimiter:
        return InProcessRateLimiter

    def test_pacing_never_exceeds_the_limit_in_any_sliding_window(self) -> None:
        """With idle gaps and bursts of demand, no 60 s window holds more than the limit."""
        limiter, fake = fake_limiter(RateLimits(requests_per_minute=600, burst_requests=10,
                                                margin_s=0.0))
        rng = random.Random(7)
        times: list[float] = []

        async def drive() -> None:
            for _ in range(6_000):
                if rng.random() < 0.01:
                    fake.now += rng.uniform(0, 90)  # idle: the burst refills
                await limiter.acquire("m", 0)
                times.append(fake.now)

        run(drive())
        assert max_in_window(times, 60.0) <= 600

    def test_default_limits_sustain_over_ninety_percent(self) -> None:
        """With the defaults (margin 2 s, burst 3), 600 rpm sustains > 95 % and stays under."""
        limiter, fake = fake_limiter(RateLimits(requests_per_minute=600))
        times: list[float] = []

        async def drive() -> None:
            for _ in range(3_000):
                await limiter.acquire("m", 0)
                times.append(fake.now)

        run(drive())
        # Half-open windows: a hair under 62 s keeps float rounding out of the count.
        assert max_in_window(times, 62.0 - 1e-6) <= 600
        per_minute = (len(times) - 1) / (times[-1] - times[0]) * 60
        assert 0.95 * 600 <= per_minute <= 600

    def test_token_budget_holds_every_window_and_requests_are_independent(self) -> None:
        """Tokens/min is its own budget: varied call sizes never overrun it in any window."""
        limiter, fake = fake_limiter(RateLimits(requests_per_minute=None,
                                                tokens_per_minute=60_000, margin_s=0.0))
        rng = random.Random(3)
        times: list[float] = []
        sizes: list[int] = []

        async def drive() -> None:
            for _ in range(2_000):
                size = rng.randint(100, 2_500)
                reservation = await limiter.acquire("m", size)
                assert reservation.reserved_tokens == size
                times.append(fake.now)
                sizes.append(size)

        run(drive())
        assert max_in_window(times, 60.0, sizes) <= 60_000
        duration_min = (times[-1] - times[0]) / 60
        assert sum(sizes[1:]) / duration_min >= 0.9 * 60_000

    def test_give_backs_never_let_actual_usage_overrun_a_window(self) -> None:
        """Reconciling to smaller actual usage after later admissions stays within the limit.

        Calls overestimate (actual is 10-100 % of the estimate) and are reconciled up to
        five calls later, as concurrent calls would be: the actual tokens in any window
        stay within the limit.
        """
        limiter, fake = fake_limiter(RateLimits(requests_per_minute=None,
                                                tokens_per_minute=30_000, margin_s=0.0))
        rng = random.Random(11)
        times: list[float] = []
        actuals: list[int] = []
        pending: list[tuple[Reservation, int]] = []

        async def drive() -> None:
            for _ in range(3_000):
                while pending and (len(pending) > 5 or rng.random() < 0.5):
                    reservation, actual = pending.pop(rng.randrange(len(pending)))
                    await limiter.reconcile(reservation, actual)
                if rng.random() < 0.02:
                    fake.now += rng.uniform(0, 40)
                estimate = rng.randint(200, 1_500)
                reservation = await limiter.acquire("m", estimate)
                actual = max(1, int(estimate * rng.uniform(0.1, 1.0)))
                times.append(fake.now)
                actuals.append(actual)
                pending.append((reservation, actual))

        run(drive())
        assert max_in_window(times, 60.0, actuals) <= 30_000

    def test_estimate_above_the_per_minute_limit_is_capped_and_admitted(self) -> None:
        """A call estimated above tokens/min reserves the limit and goes after an idle minute."""
        limiter, _ = fake_limiter(RateLimits(requests_per_minute=None,
                                             tokens_per_minute=1_000, margin_s=0.0))

        async def drive() -> None:
            small = await limiter.acquire("m", 10)
            big = await limiter.acquire("m", 50_000)
            assert big.reserved_tokens == 1_000
            assert 0 < big.waited_s <= 61.0
            assert small.waited_s == 0

        run(drive())

    def test_a_call_refused_by_one_budget_consumes_neither(self) -> None:
        """While tokens refuse a call, its request is not counted against the request budget."""
        limiter, _ = fake_limiter(RateLimits(requests_per_minute=60, burst_requests=2,
                                             tokens_per_minute=1_000, burst_tokens=500))
        assert limiter.try_acquire("m", 500)[0] == 0
        delay, _ = limiter.try_acquire("m", 500)
        assert delay > 0
        # Had the refused attempt counted, this one-token call would wait for a request slot.
        assert limiter.try_acquire("m", 0)[0] == 0


# -- Redis --------------------------------------------------------------------------


# One process sharing the budget: connects, says it is ready (a file in argv[4]), then
# reads the common start time and the duration from stdin and acquires with 8
# coroutines until the end, printing its admissions as JSON: for each, the wall time
# just before its script call was sent and just after the reply arrived. The script
# takes its admission instant from Redis's TIME (gettimeofday, the realtime clock that
# time.time() reads too, Redis being on this machine), so that instant lies in
# [sent, replied] however long the call waited for a CPU on either side.
WORKER = textwrap.dedent("""
    import asyncio, json, os, sys, time
    from pathlib import Path
    from hopindex.backends.llm.ratelimit import RateLimits, rate_limiter_for

    url, key, rpm, ready = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])

    async def main():
        limiter = rate_limiter_for(url, RateLimits(requests_per_minute=rpm, margin_s=0.0))
        # Connected and the script loaded, on a key of its own: the measured window
        # holds none of this process's start-up.
        await limiter.acquire(key + ":warm-up", 10)
        admissions = []
        script = limiter._acquire  # called as script(keys=..., args=...)

        async def recorded(keys, args):
            sent = time.time()
            result = await script(keys=keys, args=args)
            replied = time.time()
            if int(result[0]) == 1:  # {admitted, delay, tokens}: only admissions count
                admissions.append((sent, replied))
            return result

        limiter._acquire = recorded
        (ready / str(os.getpid())).touch()
        start, duration = (float(x) for x in sys.stdin.readline().split())
        end = start + duration

        async def worker():
            while time.time() < end:
                await limiter.acquire(key, 10)

        await asyncio.gather(*(worker() for _ in range(8)))
        await limiter.close()
        print(json.dumps(admissions))

    asyncio.run(main())
""")


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", WORKER, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)


def _all_ready(workers: list[subprocess.Popen[str]], ready: Path) -> bool:
    """Whether every worker has said it is ready; fails at once if one exited first."""
    for worker in workers:
        if worker.poll() is not None:
            _, err = worker.communicate()
            raise AssertionError(f"a worker exited ({worker.returncode}) before it was "
                                 f"ready: {err[-3000:]}")
    return len(list(ready.iterdir())) == len(workers)


def _most_inside(spans: list[tuple[float, float]], window: float) -> int:
    """The most spans (sent, replied) lying wholly inside one window [x, x + window].

    A best window can start at some span's ``sent``: moved right to the nearest one, it
    loses no span it held."""
    return max((sum(1 for sent, replied in spans if x <= sent and replied <= x + window)
                for x, _ in spans), default=0)


class TestRedisRateLimiter(RateLimiterContract):
    """The contract on Redis's clock, then what sharing one budget across processes adds."""

    @pytest.fixture
    def make_limiter(self, redis_url: str) -> MakeLimiter:  # noqa: F811  # fixture imported above
        def make(limits: RateLimits) -> RateLimiter:
            return RedisRateLimiter(redis_url, limits)

        return make

    @pytest.fixture
    def key(self, redis_url: str) -> Iterator[str]:  # noqa: F811  # fixture imported above
        """A fresh model key; the Redis keys of every key starting with it are deleted
        afterwards."""
        name = unique_key()
        yield name
        client = redis.Redis.from_url(redis_url)
        try:
            for found in client.scan_iter(match=f"{PREFIX}:{{{name}*"):
                client.delete(found)
        finally:
            client.close()

    @pytest.mark.parametrize("processes", [2, 4])
    def test_processes_share_one_budget(self, redis_url: str, key: str, processes: int,  # noqa: F811
                                        tmp_path: Path) -> None:
        """Several processes on one key never exceed the limit together, yet reach all of it
        but what scheduling stalls can take (84-85 %)."""
        rpm, duration = 6_000, 2.0
        workers = [_spawn(redis_url, key, str(rpm), str(tmp_path)) for _ in range(processes)]
        try:
            # Every interpreter has imported and connected, however long that took on a
            # busy machine; then all get one start time, so each runs the whole window.
            wait_until(lambda: _all_ready(workers, tmp_path), what="every worker to be ready",
                       timeout_s=120)
            start = time.time()
            for worker in workers:
                assert worker.stdin is not None
                worker.stdin.write(f"{start!r} {duration!r}\n")
                worker.stdin.flush()
            outputs = [worker.communicate(timeout=60) for worker in workers]
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.kill()
                    worker.wait()
        assert all(worker.returncode == 0 for worker in workers), [err for _, err in outputs]
        per_process = [[(sent, replied) for sent, replied in
                        json.loads(out.strip().splitlines()[-1])] for out, _ in outputs]
        spans = [span for chunk in per_process for span in chunk]
        end = start + duration
        assert all(any(replied < end for _, replied in chunk) for chunk in per_process), \
            "every process was admitted at least once"
        # At most: Redis admits on its own clock. If N admissions fall in [u, s] of it,
        # each raised tat by T from at least its own instant, so tat >= u + N*T after the
        # last; the admission test keeps tat <= s + C (+1 us: the script rounds tat up to
        # whole us), C = burst * T. So N <= (s - u + 1 us)/T + burst: for w = 60 s the
        # limit (margin 0 here). Each admission instant lies in its span [sent, replied]
        # (the worker's wall times around the call; Redis's TIME reads the same clock and
        # truncates to us, so at worst 1 us before sent). Counting in a window [x, x+w]
        # only spans wholly inside it puts every counted instant in [x - 1 us, x + w], so
        # the count is at most floor((w + 2 us)/T) + burst however late any reply was
        # read: no allowance for scheduling, and above it the limiter really overran.
        # (The 2 us never moves the floor: w/T is 49.98, 99.97, 199.93 here.)
        interval = 60 / (rpm - 3 + 1)
        for window in (0.5, 1.0, duration):
            assert _most_inside(spans, window) <= math.floor((window + 2e-6) / interval) + 3
        # At least: with a caller always waiting, the limiter admits the burst at once,
        # then one call every T: 3 + floor(D/T) = 202 in D = 2 s. It loses a slot only
        # while its budget sits full, i.e. while every process reaches Redis more than
        # (burst - 1) * T = 20 ms after it could have been admitted; and each process's
        # last admission may be answered after the end and go uncounted. What scheduling
        # can take away: every process started before the window (the handshake above),
        # so lateness is wake-up delay alone (a CPU for the woken process, then for
        # Redis, then for the reply's reader), a few ms even beside CPU hogs since a
        # waking task preempts a running one; only stalls of every process at once past
        # those 20 ms cost slots. We allow 0.3 s of them, 15 % of the window (measured
        # under a CPU hog at load average 10: none, 200-202 admissions in each of 20 runs).
        # Counted by reply time (replied < end), as this derivation assumes: the one
        # admission per process it gives up is the one answered after the end.
        stalls_s = 0.3
        admitted = sum(1 for _, replied in spans if replied < end)
        assert admitted >= 3 + math.floor((duration - stalls_s) / interval) - processes

    def test_penalize_in_one_process_delays_another(self, redis_url: str, key: str) -> None:  # noqa: F811
        """A Retry-After recorded by another process holds this one back until it passes."""
        # Says so once it has penalized, then stays until told to go: its interpreter's
        # exit, slow on a busy machine, is not taken out of the second it holds back.
        snippet = textwrap.dedent("""
            import asyncio, sys
            from hopindex.backends.llm.ratelimit import RateLimits, rate_limiter_for

            async def main():
                limiter = rate_limiter_for(sys.argv[1], RateLimits(requests_per_minute=600))
                await limiter.penalize(sys.argv[2], 1.0)
                await limiter.close()

            asyncio.run(main())
            print("penalized", flush=True)
            sys.stdin.read()
        """)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        other = subprocess.Popen([sys.executable, "-c", snippet, redis_url, key], env=env,
                                 cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
        try:
            assert other.stdout is not None
            # Its log lines come first on the same stream.
            said = next((line for line in other.stdout if line.strip() == "penalized"), None)
            assert said is not None, f"the other process exited first ({other.wait()})"

            async def drive() -> Reservation:
                limiter = RedisRateLimiter(redis_url, RateLimits(requests_per_minute=600))
                try:
                    return await limiter.acquire(key, 10)
                finally:
                    await limiter.close()

            # Held back for the rest of the 1 s: from the line above to the first attempt
            # is one wake-up and a connection, leaving far more than 0.05 s even on a busy
            # machine; at most 1 s plus a wake-up's lateness.
            assert 0.05 < run(drive()).waited_s <= 1.2
        finally:
            other.communicate(timeout=30)  # closes its stdin: it exits

    def test_script_survives_script_flush(self, key: str) -> None:
        """After SCRIPT FLUSH the scripts are reloaded transparently (NOSCRIPT handled).

        SCRIPT FLUSH empties the whole server's script cache, so it runs on a server of
        its own: on the shared one it pulled scripts from under other workers' tests."""

        async def drive(url: str) -> None:
            limiter = RedisRateLimiter(url, RateLimits(requests_per_minute=6_000,
                                                             tokens_per_minute=100_000))
            try:
                first = await limiter.acquire(key, 100)
                await limiter._client.script_flush()
                await limiter.reconcile(first, 50)
                await limiter.acquire(key, 100)
                await limiter._client.script_flush()
                await limiter.penalize(key, 0.01)
            finally:
                await limiter.close()

        with private_redis_server() as url:
            run(drive(url))

    def test_a_call_waiting_on_tokens_takes_no_request_slot(self, redis_url: str,  # noqa: F811
                                                           key: str) -> None:
        """While the token budget holds a call back, the requests budget's state in Redis
        does not move: a refused call consumes neither budget."""

        async def drive() -> None:
            client = redis.asyncio.Redis.from_url(redis_url)
            limiter = RedisRateLimiter(redis_url, RateLimits(
                requests_per_minute=6_000, tokens_per_minute=6_000, burst_tokens=1_000))
            requests_key = RedisRateLimiter.keys(key)[0]
            try:
                await limiter.acquire(key, 1_000)
                tat = await client.hget(requests_key, "tat")
                waiting = asyncio.create_task(limiter.acquire(key, 1_000))
                # The positive signal that Redis has refused it: the limiter marks the
                # sleep a budget imposes only after the script said no. That sleep is
                # 12.4 s (1,000 tokens at 62 s / 5,001), so the call is held meanwhile.
                await asyncio.to_thread(
                    wait_until, lambda: limiter._held[key].asleep_since is not None,
                    what="the second call to be refused and sleep for the token budget")
                assert not waiting.done()
                assert await client.hget(requests_key, "tat") == tat
                waiting.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await waiting
            finally:
                await limiter.close()
                await client.aclose()

        run(drive())

    def test_unreachable_redis_is_retryable_and_hides_credentials(self) -> None:
        """A Redis that does not answer gives BackendUnavailableError naming the URL sans
        password."""
        from hopindex.testing.redis_server import free_port

        url = f"redis://user:s3cret@127.0.0.1:{free_port()}/0"
        assert public_url(url) == f"redis://127.0.0.1:{url.rsplit(':', 1)[1]}"

        async def drive() -> None:
            limiter = RedisRateLimiter(url, RateLimits(requests_per_minute=60))
            try:
                await limiter.acquire("m", 1)
            finally:
                await limiter.close()

        with pytest.raises(BackendUnavailableError) as info:
            run(drive())
        assert info.value.retryable
        assert "s3cret" not in str(info.value)
        assert "127.0.0.1" in str(info.value)
