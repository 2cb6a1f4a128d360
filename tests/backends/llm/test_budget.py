"""The LLM budget account, on SQLite and on Redis: reservations are atomic, settling
swaps an estimate for the real usage, and processes racing for the last of a budget
never take more than it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis

from hopindex.backends.llm.budget import LlmBudget, SqliteLlmBudget, llm_budget_for
from hopindex.backends.llm.budget_redis import RedisLlmBudget
from hopindex.core.budget import BudgetCharge, BudgetLimits
from hopindex.core.errors import ConfigError
from tests.redis_server import redis_url, unique_key  # noqa: F401  # re-exported fixture

NONE = BudgetLimits()

ROOT = Path(__file__).resolve().parents[3]
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def test_llm_budget_for_picks_by_url(tmp_path: Path) -> None:
    """No URL: the SQLite account; a Redis URL: Redis; any other scheme: a ConfigError."""
    assert isinstance(llm_budget_for("", tmp_path / "b.sqlite"), SqliteLlmBudget)
    assert isinstance(llm_budget_for("redis://127.0.0.1:1/0", tmp_path / "b.sqlite"),
                      RedisLlmBudget)
    with pytest.raises(ConfigError, match="scheme 'http'"):
        llm_budget_for("http://x", tmp_path / "b.sqlite")


@pytest.fixture(params=["sqlite", "redis"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where the account lives: a SQLite file path, or a Redis URL with a fresh prefix
    whose keys are deleted afterwards (``url|prefix``)."""
    if request.param == "sqlite":
        yield str(tmp_path / "budget.sqlite")
        return
    url = request.getfixturevalue("redis_url")
    prefix = unique_key("hopindex-budget-test")
    yield f"{url}|{prefix}"
    client = redis.Redis.from_url(url)
    try:
        for key in client.scan_iter(match=f"{prefix}:*"):
            client.delete(key)
    finally:
        client.close()


def open_budget(target: str) -> LlmBudget:
    if "|" in target:
        url, prefix = target.split("|")
        return RedisLlmBudget(url, prefix=prefix)
    return SqliteLlmBudget(Path(target))


def within(target: str, body: Callable[[LlmBudget], Coroutine[Any, Any, T]]) -> T:
    async def main() -> T:
        account = open_budget(target)
        try:
            return await body(account)
        finally:
            await account.close()

    return run(main())


def test_a_job_without_limits_is_always_admitted(target: str) -> None:
    """No limits: every reservation is admitted and nothing is held."""
    async def body(budget: LlmBudget) -> None:
        assert await budget.reserve("job-1", NONE, BudgetCharge(10**9, 10**6))
        status = await budget.status("job-1", NONE)
        assert status.spent == BudgetCharge(0) and status.held == BudgetCharge(0)

    within(target, body)


def test_reserve_holds_and_settle_swaps_the_estimate_for_usage(target: str) -> None:
    """A reservation holds its estimate; settling releases it and spends the actual."""
    async def body(budget: LlmBudget) -> None:
        limits = BudgetLimits(max_llm_tokens=1000, max_cost=1.0)
        assert await budget.reserve("job-1", limits, BudgetCharge(400, 0.25))
        held = await budget.status("job-1", limits)
        assert held.held == BudgetCharge(400, 0.25) and held.spent == BudgetCharge(0)
        await budget.settle("job-1", BudgetCharge(400, 0.25), BudgetCharge(300, 0.125))
        settled = await budget.status("job-1", limits)
        assert settled.held == BudgetCharge(0)
        assert settled.spent == BudgetCharge(300, 0.125)
        assert settled.limits == limits

    within(target, body)


def test_a_call_that_does_not_fit_is_refused_and_holds_nothing(target: str) -> None:
    """Refused by either limit: False, and the account is unchanged; an exact fit is
    admitted."""
    async def body(budget: LlmBudget) -> None:
        limits = BudgetLimits(max_llm_tokens=1000, max_cost=0.3)
        assert await budget.reserve("job-1", limits, BudgetCharge(600, 0.1))
        assert not await budget.reserve("job-1", limits, BudgetCharge(401, 0.1))  # tokens
        assert not await budget.reserve("job-1", limits, BudgetCharge(10, 0.25))  # cost
        assert (await budget.status("job-1", limits)).held == BudgetCharge(600, 0.1)
        assert await budget.reserve("job-1", limits, BudgetCharge(400, 0.2))  # exactly the rest
        assert not await budget.reserve("job-1", limits, BudgetCharge(1, 0.0))

    within(target, body)


def test_a_budget_below_one_call_refuses_the_first(target: str) -> None:
    """A limit smaller than one call's estimate refuses before anything is spent, and
    the refusal says so."""
    async def body(budget: LlmBudget) -> None:
        limits = BudgetLimits(max_llm_tokens=100)
        wanted = BudgetCharge(500)
        assert not await budget.reserve("job-1", limits, wanted)
        reason = (await budget.status("job-1", limits)).refusal(wanted)
        assert reason.startswith("LLM budget is below the cost of one call")
        assert "max_llm_tokens 100" in reason and "about 500" in reason

    within(target, body)


def test_raising_limits_keeps_the_spend(target: str) -> None:
    """A resume with a higher budget admits again, counting what was spent before."""
    async def body(budget: LlmBudget) -> None:
        limits = BudgetLimits(max_llm_tokens=500)
        assert await budget.reserve("job-1", limits, BudgetCharge(400))
        await budget.settle("job-1", BudgetCharge(400), BudgetCharge(450))
        assert not await budget.reserve("job-1", limits, BudgetCharge(100))
        limits = BudgetLimits(max_llm_tokens=600)
        assert await budget.reserve("job-1", limits, BudgetCharge(100))
        assert not await budget.reserve("job-1", limits, BudgetCharge(100))
        status = await budget.status("job-1", limits)
        assert status.spent.tokens == 450 and status.held.tokens == 100
        await budget.forget("job-1")
        assert (await budget.status("job-1", limits)).spent == BudgetCharge(0)

    within(target, body)


def test_jobs_have_separate_accounts(target: str) -> None:
    """One job's spend never counts against another's budget."""
    async def body(budget: LlmBudget) -> None:
        limits = BudgetLimits(max_llm_tokens=100)
        assert await budget.reserve("job-a", limits, BudgetCharge(100))
        assert await budget.reserve("job-b", limits, BudgetCharge(100))
        assert not await budget.reserve("job-a", limits, BudgetCharge(1))

    within(target, body)


def test_underestimates_overrun_by_at_most_one_call_per_slot(target: str) -> None:
    """Concurrent calls that each use more than they reserved: the spend passes the
    limit by no more than the calls in flight under-estimated (one per slot)."""
    slots, estimate, actual, limit = 4, 100, 130, 1000

    async def body(budget: LlmBudget) -> int:
        limits = BudgetLimits(max_llm_tokens=limit)

        async def slot() -> None:
            while await budget.reserve("job-1", limits, BudgetCharge(estimate)):
                # The LLM call in flight, simulated: the other slots reserve meanwhile. A
                # stand-in for work, not a wait for the budget; no assertion rests on it.
                await asyncio.sleep(0.001)
                await budget.settle("job-1", BudgetCharge(estimate), BudgetCharge(actual))

        await asyncio.gather(*(slot() for _ in range(slots)))
        status = await budget.status("job-1", limits)
        assert status.held == BudgetCharge(0)
        return status.spent.tokens

    spent = within(target, body)
    assert limit - estimate < spent <= limit + slots * (actual - estimate)


RACER = textwrap.dedent("""
    import asyncio, json, sys
    from pathlib import Path
    from hopindex.backends.llm.budget import SqliteLlmBudget
    from hopindex.backends.llm.budget_redis import RedisLlmBudget
    from hopindex.core.budget import BudgetCharge, BudgetLimits

    target, job_id, tokens, cost = sys.argv[1], sys.argv[2], int(sys.argv[3]), \\
        float(sys.argv[4])
    limits = BudgetLimits(max_llm_tokens=int(sys.argv[5]), max_cost=float(sys.argv[6]))

    async def main():
        if "|" in target:
            url, prefix = target.split("|")
            budget = RedisLlmBudget(url, prefix=prefix)
        else:
            budget = SqliteLlmBudget(Path(target))
        admitted = 0
        # Holds and never settles: every admission stays counted, the hardest case.
        while await budget.reserve(job_id, limits, BudgetCharge(tokens, cost)):
            admitted += 1
        await budget.close()
        print(json.dumps(admitted))

    asyncio.run(main())
""")


@pytest.mark.integration
@pytest.mark.parametrize("racers", [2, 4])
def test_processes_racing_for_the_last_of_a_budget_never_exceed_it(target: str,
                                                                   racers: int) -> None:
    """Several processes reserving as fast as they can: together they are admitted
    exactly as many calls as the budget holds, never one more."""
    job_id = unique_key("job")
    tokens, cost, limit_tokens, limit_cost = 7, 0.01, 7 * 60, 0.45

    limits = BudgetLimits(max_llm_tokens=limit_tokens, max_cost=limit_cost)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-c", RACER, target, job_id, str(tokens), str(cost),
            str(limit_tokens), str(limit_cost)]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, cwd=ROOT) for _ in range(racers)]
    counts = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        counts.append(json.loads(out))

    async def held(budget: LlmBudget) -> BudgetCharge:
        return (await budget.status(job_id, limits)).held

    total = within(target, held)
    # The cost limit (45 calls) binds before the tokens one (60).
    assert sum(counts) == 45, counts
    assert total.tokens == 45 * tokens <= limit_tokens
    assert total.cost <= limit_cost + 1e-9
