"""The LLM budget shared through Redis: each reservation and settlement is one Lua
script, so workers on any machine never both take the last of a job's budget.

Key: ``hopindex:budget:<job_id>``, a hash with ``spent_tokens``/``spent_cost`` (settled
calls) and ``held_tokens``/``held_cost`` (calls in flight); the limits come with each
reservation, from the job record. No expiry: a paused job may wait
for its resume indefinitely; the job's end forgets the key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import redis.asyncio as aioredis

from hopindex.backends.llm.ratelimit_redis import CONNECT_TIMEOUT_S, public_url, run_on_redis
from hopindex.core.budget import COST_TOLERANCE, BudgetCharge, BudgetLimits, BudgetStatus

PREFIX = "hopindex:budget"
_FIELDS = ("spent_tokens", "spent_cost", "held_tokens", "held_cost")

# KEYS: the job's hash. ARGV: tokens, cost, cost tolerance, max tokens, max cost ('' for
# no limit of that kind). Returns 1 when admitted.
_RESERVE = """
local h = redis.call('HMGET', KEYS[1], 'spent_tokens', 'spent_cost', 'held_tokens',
                     'held_cost')
local tokens, cost, tol = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local max_t, max_c = tonumber(ARGV[4]), tonumber(ARGV[5])
local spent_t, spent_c = tonumber(h[1]) or 0, tonumber(h[2]) or 0
local held_t, held_c = tonumber(h[3]) or 0, tonumber(h[4]) or 0
if max_t and spent_t + held_t + tokens > max_t then return 0 end
if max_c and spent_c + held_c + cost > max_c + tol then return 0 end
redis.call('HINCRBY', KEYS[1], 'held_tokens', tokens)
redis.call('HINCRBYFLOAT', KEYS[1], 'held_cost', ARGV[2])
return 1
"""

# KEYS: the job's hash. ARGV: reserved tokens, reserved cost, actual tokens, actual cost.
# Holds never go below zero: an account forgotten since the reservation holds none of it.
_SETTLE = """
local held_t = tonumber(redis.call('HGET', KEYS[1], 'held_tokens')) or 0
local held_c = tonumber(redis.call('HGET', KEYS[1], 'held_cost')) or 0
redis.call('HSET', KEYS[1], 'held_tokens', math.max(held_t - tonumber(ARGV[1]), 0),
           'held_cost', string.format('%.17g', math.max(held_c - tonumber(ARGV[2]), 0)))
redis.call('HINCRBY', KEYS[1], 'spent_tokens', ARGV[3])
redis.call('HINCRBYFLOAT', KEYS[1], 'spent_cost', ARGV[4])
return 1
"""

T = TypeVar("T")


def _number(value: bytes | str | None) -> float | None:
    return None if value is None else float(value)


class RedisLlmBudget:
    """Job budgets in Redis, shared by every process using the same URL. One instance
    belongs to one event loop."""

    def __init__(self, url: str, *, prefix: str = PREFIX,
                 client: aioredis.Redis | None = None) -> None:
        self.url = public_url(url)
        self.prefix = prefix
        self._client = client or aioredis.Redis.from_url(
            url, socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=CONNECT_TIMEOUT_S)
        self._reserve = self._client.register_script(_RESERVE)
        self._settle = self._client.register_script(_SETTLE)

    def key(self, job_id: str) -> str:
        return f"{self.prefix}:{job_id}"

    async def _run(self, call: Callable[[], Awaitable[T]]) -> T:
        return await run_on_redis(f"LLM budget Redis at {self.url}", call)

    async def reserve(self, job_id: str, limits: BudgetLimits, charge: BudgetCharge) -> bool:
        if not limits.is_limited:
            return True  # nothing to hold against
        args: list[str | int] = [
            charge.tokens, repr(charge.cost), repr(COST_TOLERANCE),
            "" if limits.max_llm_tokens is None else limits.max_llm_tokens,
            "" if limits.max_cost is None else repr(limits.max_cost)]
        result = await self._run(lambda: self._reserve(keys=[self.key(job_id)], args=args))
        return int(result) == 1

    async def settle(self, job_id: str, reserved: BudgetCharge, actual: BudgetCharge) -> None:
        args: list[str | int] = [reserved.tokens, repr(reserved.cost), actual.tokens,
                                 repr(actual.cost)]
        await self._run(lambda: self._settle(keys=[self.key(job_id)], args=args))

    async def status(self, job_id: str, limits: BudgetLimits) -> BudgetStatus:
        values = await self._run(lambda: self._client.hmget(self.key(job_id), list(_FIELDS)))
        spent_t, spent_c, held_t, held_c = (_number(v) for v in values)
        return BudgetStatus(
            limits,
            BudgetCharge(int(spent_t or 0), max(spent_c or 0.0, 0.0)),
            BudgetCharge(max(int(held_t or 0), 0), max(held_c or 0.0, 0.0)))

    async def forget(self, job_id: str) -> None:
        await self._run(lambda: self._client.delete(self.key(job_id)))

    async def close(self) -> None:
        await self._client.aclose()
