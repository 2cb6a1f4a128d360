"""The rate limiter shared through Redis: the GCRA of ``ratelimit_budgets`` as Lua scripts.

Each decision is one script, so it is atomic: the requests budget, the tokens
budget and the ``Retry-After`` block of a key are read and written together, and
a call refused by one budget never consumes the other. Time is Redis's ``TIME``,
so processes on machines with different clocks agree. Times are integer
microseconds (exact in Lua's doubles until the year 2255) and are formatted by the
script itself, because Redis would render a Lua number with only 14 digits.

Keys: ``hopindex:ratelimit:{<key>}:requests`` and ``…:tokens`` (hashes with
``tat``, ``total``, ``last``) and ``…:blocked`` (a time). The braces are a Redis
Cluster hash tag keeping one model's keys in one slot, as a script requires. Each
key expires once it can no longer constrain anything.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from hopindex.backends.llm.ratelimit_budgets import (
    MIN_SLEEP_S,
    Gcra,
    RateLimits,
    Reservation,
    check_tokens,
)
from hopindex.core.errors import BackendUnavailableError
from hopindex.core.logging import get_logger

log = get_logger(__name__)

PREFIX = "hopindex:ratelimit"
# Waiters re-check when their delay has passed; a little jitter keeps processes
# woken for the same slot from all reaching Redis in the same instant. The burst
# absorbs the lateness it adds.
MAX_JITTER_S = 0.01
CONNECT_TIMEOUT_S = 5.0

_LUA_COMMON = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function fmt(x) return string.format('%.0f', x) end
local function expire(key, tat, horizon)
  redis.call('PEXPIRE', key, fmt(math.ceil((math.max(tat - now, 0) + horizon) / 1000) + 1))
end
"""

# KEYS: requests hash, tokens hash, blocked.
# ARGV: requests interval, capacity; tokens interval, capacity (µs, interval 0 =
# unlimited); token cost; horizon (µs).
# Returns {admitted, delay µs, tokens total after admission}.
_ACQUIRE = _LUA_COMMON + """
local r_int, r_cap = tonumber(ARGV[1]), tonumber(ARGV[2])
local t_int, t_cap = tonumber(ARGV[3]), tonumber(ARGV[4])
local cost, horizon = tonumber(ARGV[5]), tonumber(ARGV[6])
local delay = (tonumber(redis.call('GET', KEYS[3])) or 0) - now
local r_tat, t_tat
if r_int > 0 then
  r_tat = tonumber(redis.call('HGET', KEYS[1], 'tat'))
  if r_tat then delay = math.max(delay, r_tat + r_int - r_cap - now) end
end
if t_int > 0 then
  t_tat = tonumber(redis.call('HGET', KEYS[2], 'tat'))
  if t_tat then delay = math.max(delay, t_tat + cost * t_int - t_cap - now) end
end
if delay > 0 then return {0, math.ceil(delay), 0} end
local total = 0
if r_int > 0 then
  local tat = math.ceil(math.max(r_tat or now, now) + r_int)
  redis.call('HSET', KEYS[1], 'tat', fmt(tat))
  expire(KEYS[1], tat, horizon)
end
if t_int > 0 then
  local tat = math.ceil(math.max(t_tat or now, now) + cost * t_int)
  total = redis.call('HINCRBY', KEYS[2], 'total', cost)
  redis.call('HSET', KEYS[2], 'tat', fmt(tat), 'last', fmt(now))
  expire(KEYS[2], tat, horizon)
end
return {1, 0, total}
"""

# KEYS: tokens hash. ARGV: actual - reserved, interval (µs), horizon (µs), the
# total just after the reservation. Mirrors InProcessRateLimiter.reconcile.
_RECONCILE = _LUA_COMMON + """
local delta, interval = tonumber(ARGV[1]), tonumber(ARGV[2])
local horizon, total_r = tonumber(ARGV[3]), tonumber(ARGV[4])
local tat = tonumber(redis.call('HGET', KEYS[1], 'tat'))
if delta > 0 then
  local new = math.ceil(math.max(tat or now, now) + delta * interval)
  redis.call('HINCRBY', KEYS[1], 'total', delta)
  redis.call('HSET', KEYS[1], 'tat', fmt(new), 'last', fmt(now))
  expire(KEYS[1], new, horizon)
elseif delta < 0 and tat then
  local total = tonumber(redis.call('HGET', KEYS[1], 'total')) or 0
  local last = tonumber(redis.call('HGET', KEYS[1], 'last')) or now
  local floor = -math.huge
  if total > total_r then floor = last + (total - total_r) * interval end
  local new = math.ceil(math.max(tat + delta * interval, math.min(tat, floor)))
  redis.call('HSET', KEYS[1], 'tat', fmt(new))
end
return 1
"""

# KEYS: blocked. ARGV: retry-after (µs). Only ever extends the block.
_PENALIZE = _LUA_COMMON + """
local till = now + tonumber(ARGV[1])
if till > (tonumber(redis.call('GET', KEYS[1])) or 0) then
  redis.call('SET', KEYS[1], fmt(till), 'PX', fmt(math.ceil(tonumber(ARGV[1]) / 1000) + 1))
end
return 1
"""

T = TypeVar("T")


def public_url(url: str) -> str:
    """``url`` without user name or password, for messages and logs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _us(seconds: float) -> int:
    return math.ceil(seconds * 1_000_000)


def _budget_args(gcra: Gcra | None) -> list[float]:
    # Fractional microseconds are kept: at millions of tokens a minute the interval
    # is a few microseconds, and rounding it would distort the rate.
    if gcra is None:
        return [0.0, 0.0]
    return [gcra.interval_s * 1_000_000, gcra.capacity_s * 1_000_000]


async def run_on_redis(what: str, call: Callable[[], Awaitable[T]]) -> T:
    """``call``'s result; any Redis failure a retryable ``BackendUnavailableError`` naming
    ``what``. Every failure is retryable: it is Redis's state (down, loading, out of
    memory, read-only after a failover, unable to persist), never the call's, and a task
    retried later may find it fixed; one that lasts fails the job after the task's
    bounded retries, naming it."""
    try:
        return await call()
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise BackendUnavailableError(f"{what} is unreachable: {exc}") from exc
    except RedisError as exc:
        raise BackendUnavailableError(f"{what} failed: {exc}") from exc


@dataclass(slots=True)
class _HeldBack:
    """How long the holders of one key's lock have slept for a budget, in total.

    A caller queued behind the holder is held back by a budget exactly while the
    holder sleeps for one, so its wait is how much this total grew during its stay;
    the holders' round trips to Redis, which it also queues behind, are not a wait for
    any budget and do not count.
    """

    slept_s: float = 0.0
    asleep_since: float | None = None

    def total_s(self, now: float) -> float:
        ongoing = 0.0 if self.asleep_since is None else now - self.asleep_since
        return self.slept_s + ongoing


class RedisRateLimiter:
    """Budgets in Redis, shared by every process (on any machine) using the same URL.

    Within one process, callers waiting on the same key queue behind an
    ``asyncio.Lock`` (FIFO) and only its holder asks Redis, so the number of
    contenders at each slot is the number of processes, not of coroutines. One
    instance belongs to one event loop.
    """

    def __init__(self, url: str, limits: RateLimits, *,
                 client: aioredis.Redis | None = None) -> None:
        self.limits = limits
        self.url = public_url(url)
        self._requests = limits.request_budget()
        self._tokens = limits.token_budget()
        self._client = client or aioredis.Redis.from_url(
            url, socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=CONNECT_TIMEOUT_S)
        self._acquire = self._client.register_script(_ACQUIRE)
        self._reconcile = self._client.register_script(_RECONCILE)
        self._penalize = self._client.register_script(_PENALIZE)
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._held: defaultdict[str, _HeldBack] = defaultdict(_HeldBack)
        self._horizon_us = _us(self._requests.horizon_s if self._requests
                               else self._tokens.horizon_s if self._tokens else 0.0)
        self._acquire_args = [*_budget_args(self._requests), *_budget_args(self._tokens)]

    @staticmethod
    def keys(key: str) -> tuple[str, str, str]:
        base = f"{PREFIX}:{{{key}}}"
        return f"{base}:requests", f"{base}:tokens", f"{base}:blocked"

    async def _run(self, call: Callable[[], Awaitable[T]]) -> T:
        return await run_on_redis(f"rate limiter Redis at {self.url}", call)

    async def _script(self, script: AsyncScript, keys: Sequence[str],
                      args: Sequence[float]) -> object:
        result: object = await self._run(lambda: script(keys=keys, args=args))
        return result

    async def acquire(self, key: str, estimated_tokens: int) -> Reservation:
        check_tokens(estimated_tokens)
        tokens = self._tokens.cost(estimated_tokens) if self._tokens else estimated_tokens
        args = [*self._acquire_args, tokens, self._horizon_us]
        held = self._held[key]
        arrived = held.total_s(time.monotonic())
        async with self._locks[key]:
            while True:
                result = await self._script(self._acquire, self.keys(key), args)
                assert isinstance(result, list)  # the script always returns a table
                admitted, delay_us, total = (int(x) for x in result)
                if admitted:
                    break
                delay = delay_us / 1_000_000
                held.asleep_since = asleep_since = time.monotonic()
                try:
                    await asyncio.sleep(max(delay, MIN_SLEEP_S)
                                        + random.uniform(0, min(MAX_JITTER_S, delay / 10)))
                finally:
                    held.slept_s += time.monotonic() - asleep_since
                    held.asleep_since = None
            waited = held.total_s(time.monotonic()) - arrived
        if waited > 0.001:
            log.debug("ratelimit_wait", key=key, waited_s=round(waited, 3), tokens=tokens)
        return Reservation(key=key, reserved_tokens=tokens, waited_s=waited, token_total=total)

    async def reconcile(self, reservation: Reservation, actual_tokens: int) -> None:
        check_tokens(actual_tokens)
        delta = actual_tokens - reservation.reserved_tokens
        if self._tokens is None or delta == 0:
            return
        args = [delta, self._tokens.interval_s * 1_000_000, self._horizon_us,
                reservation.token_total]
        await self._script(self._reconcile, self.keys(reservation.key)[1:2], args)

    async def penalize(self, key: str, retry_after_s: float) -> None:
        if not (retry_after_s > 0 and math.isfinite(retry_after_s)):
            return
        await self._script(self._penalize, self.keys(key)[2:], [_us(retry_after_s)])
        log.info("ratelimit_penalized", key=key, retry_after_s=retry_after_s)

    async def close(self) -> None:
        await self._client.aclose()
