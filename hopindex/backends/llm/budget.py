"""The shared account of each job's LLM budget: reserve before a call, settle after.

Every LLM call of a job with a budget goes through an :class:`LlmBudget`::

    budget = llm_budget_for(redis_url, sqlite_path)
    limits = job.budget                          # the job record's, raised by a resume
    estimate = BudgetCharge(tokens=1_800, cost=0.002)
    if not await budget.reserve(job_id, limits, estimate):
        status = await budget.status(job_id, limits)   # figures for the pause reason
        raise BudgetExhaustedError(status.refusal(estimate), ...)
    try:
        response = await call_provider(...)
    finally:
        await budget.settle(job_id, estimate, BudgetCharge(tokens=used, cost=paid))

The limits come with each reservation, from the job record: a resume that raises
them changes the record, and the account keeps only what was spent and is held.
A reservation is admitted only when what settled calls spent, what calls in flight
hold and the new estimate together fit every limit, in one atomic step; settling
swaps the estimate for the real usage. So the spend can pass a limit only by how
much the calls in flight at that moment under-estimated: at most one call per
worker slot. A job with no limits is always admitted.

``llm_budget_for`` gives a :class:`~hopindex.backends.llm.budget_redis.RedisLlmBudget`
for a Redis URL (shared by every worker on any machine) and a :class:`SqliteLlmBudget`
otherwise (the embedded mode; processes sharing the file share the account).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from hopindex.backends.sqlite import SqliteFile
from hopindex.core.budget import COST_TOLERANCE, BudgetCharge, BudgetLimits, BudgetStatus
from hopindex.core.errors import ConfigError
from hopindex.core.settings import REDIS_SCHEMES


class LlmBudget(Protocol):
    async def reserve(self, job_id: str, limits: BudgetLimits, charge: BudgetCharge) -> bool:
        """Hold ``charge`` for one call of ``job_id`` if it fits ``limits``; False,
        holding nothing, when it does not."""
        ...

    async def settle(self, job_id: str, reserved: BudgetCharge, actual: BudgetCharge) -> None:
        """Release the ``reserved`` hold and spend ``actual`` (zero when the call failed)."""
        ...

    async def status(self, job_id: str, limits: BudgetLimits) -> BudgetStatus:
        """The job's spend and holds against ``limits`` (zeros for an unknown job)."""
        ...

    async def forget(self, job_id: str) -> None:
        """Drop the job's account (the job ended)."""
        ...

    async def close(self) -> None: ...


def fits(limits: BudgetLimits, spent: BudgetCharge, held: BudgetCharge,
         charge: BudgetCharge) -> bool:
    """Whether one more call of ``charge`` stays within every limit."""
    if (limits.max_llm_tokens is not None
            and spent.tokens + held.tokens + charge.tokens > limits.max_llm_tokens):
        return False
    return not (limits.max_cost is not None
                and spent.cost + held.cost + charge.cost > limits.max_cost + COST_TOLERANCE)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_budgets (
    job_id TEXT PRIMARY KEY,
    spent_tokens INTEGER NOT NULL DEFAULT 0,
    spent_cost REAL NOT NULL DEFAULT 0,
    held_tokens INTEGER NOT NULL DEFAULT 0,
    held_cost REAL NOT NULL DEFAULT 0
)
"""

_WHAT = "sqlite LLM budget"
_Row = tuple[int, float, int, float]


def _status(row: _Row | None, limits: BudgetLimits) -> BudgetStatus:
    if row is None:
        return BudgetStatus(limits, BudgetCharge(0), BudgetCharge(0))
    spent_tokens, spent_cost, held_tokens, held_cost = row
    return BudgetStatus(limits, BudgetCharge(spent_tokens, max(spent_cost, 0.0)),
                        BudgetCharge(max(held_tokens, 0), max(held_cost, 0.0)))


class SqliteLlmBudget:
    """The accounts in one SQLite file: each decision is one ``BEGIN IMMEDIATE``
    transaction, so threads and processes sharing the file never both take the last
    of a budget. The statements are a few microseconds, so they run in the caller's
    event loop like the in-process rate limiter's."""

    def __init__(self, path: Path) -> None:
        self._db = SqliteFile(path, _WHAT)
        with self._db.transaction("create", write=True) as conn:
            conn.execute(_SCHEMA)

    @staticmethod
    def _read(conn: sqlite3.Connection, job_id: str) -> _Row | None:
        row: _Row | None = conn.execute(
            "SELECT spent_tokens, spent_cost, held_tokens, held_cost "
            "FROM llm_budgets WHERE job_id = ?", (job_id,)).fetchone()
        return row

    async def reserve(self, job_id: str, limits: BudgetLimits, charge: BudgetCharge) -> bool:
        if not limits.is_limited:
            return True  # nothing to hold against
        with self._db.transaction("reserve", write=True) as conn:
            status = _status(self._read(conn, job_id), limits)
            if not fits(limits, status.spent, status.held, charge):
                return False
            conn.execute(
                "INSERT INTO llm_budgets (job_id, held_tokens, held_cost) VALUES (?, ?, ?) "
                "ON CONFLICT (job_id) DO UPDATE SET held_tokens = held_tokens + ?, "
                "held_cost = held_cost + ?",
                (job_id, charge.tokens, charge.cost, charge.tokens, charge.cost))
            return True

    async def settle(self, job_id: str, reserved: BudgetCharge, actual: BudgetCharge) -> None:
        with self._db.transaction("settle", write=True) as conn:
            # An account forgotten since the reservation holds nothing of it: the clamps
            # keep its holds from going negative.
            conn.execute(
                "INSERT INTO llm_budgets (job_id, spent_tokens, spent_cost) VALUES (?, ?, ?) "
                "ON CONFLICT (job_id) DO UPDATE SET held_tokens = max(held_tokens - ?, 0), "
                "held_cost = max(held_cost - ?, 0), spent_tokens = spent_tokens + ?, "
                "spent_cost = spent_cost + ?",
                (job_id, actual.tokens, actual.cost, reserved.tokens, reserved.cost,
                 actual.tokens, actual.cost))

    async def status(self, job_id: str, limits: BudgetLimits) -> BudgetStatus:
        with self._db.transaction("status", write=False) as conn:
            return _status(self._read(conn, job_id), limits)

    async def forget(self, job_id: str) -> None:
        with self._db.transaction("forget", write=True) as conn:
            conn.execute("DELETE FROM llm_budgets WHERE job_id = ?", (job_id,))

    async def close(self) -> None:
        self._db.close()


def llm_budget_for(url: str | None, path: Path) -> LlmBudget:
    """A Redis-backed budget for ``redis://``, ``rediss://`` or ``unix://``; else the
    SQLite account in ``path``."""
    if not url:
        return SqliteLlmBudget(path)
    scheme = urlsplit(url).scheme
    if scheme not in REDIS_SCHEMES:
        raise ConfigError(f"LLM budget URL must use one of {', '.join(REDIS_SCHEMES)}, "
                          f"got scheme {scheme!r}")
    from hopindex.backends.llm.budget_redis import RedisLlmBudget

    return RedisLlmBudget(url)
