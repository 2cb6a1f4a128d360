"""Query efficiency across a run's rows: time per query (TPQ) and the time-pool efficiency
ratio (TPER) that SiReRAG's paper reports.

TPQ is the mean latency per question, in seconds. A query method that retrieves from a
pool of units puts its size in each query's trace (``pool_size``); a row's pool size is
the median over its questions. Rows of one query method on one index that carry a pool
are compared against the row with the smallest pool, the baseline B:

    TPER_A = (TPQ_A / TPQ_B) / (pool_A / pool_B)

Below 1, A's larger pool costs less time than its size alone would predict. The baseline
scores exactly 1 against itself: the column stays one series of numbers.

Pure: no report types, so report.py can import it and tests can check it by hand.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hopindex.core.errors import InvalidInputError
from hopindex.evaluation.metrics import percentile

POOL_SIZE_KEY = "pool_size"


def pool_size_from_trace(trace: Mapping[str, Any], *, where: str) -> int | None:
    """The number of units the query retrieved from, or None when its trace names none."""
    value = trace.get(POOL_SIZE_KEY)
    if value is None:
        return None
    # bool is an int subclass; True is no pool size.
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"a pool size is a whole number of units, 0 or more, "
                                f"got {value!r}", where=where)
    return value


def time_per_query(latencies_s: Sequence[float]) -> float:
    """Mean seconds per question; 0.0 for no questions, like the run's other figures."""
    return sum(latencies_s) / len(latencies_s) if latencies_s else 0.0


def median_pool_size(sizes: Sequence[int]) -> float | None:
    """The median over the questions that reported a pool; None when none did."""
    return percentile([float(s) for s in sizes], 50) if sizes else None


def tper(tpq_a: float, pool_a: float, tpq_b: float, pool_b: float) -> float | None:
    """(TPQ_A / TPQ_B) / (pool_A / pool_B); None where a zero makes the ratio meaningless."""
    if tpq_b <= 0 or pool_a <= 0 or pool_b <= 0:
        return None
    return (tpq_a / tpq_b) / (pool_a / pool_b)


@dataclass(frozen=True, slots=True)
class EfficiencyRow:
    """What TPER needs of one report row. Rows with equal ``group`` (index method and
    query method) ran on one index and are comparable."""

    group: Hashable
    tpq_s: float | None
    pool_size: float | None


@dataclass(frozen=True, slots=True)
class Tper:
    """A row's TPER against its group's baseline, ``baseline`` being that row's position;
    ``value`` None when the baseline's TPQ or pool is zero, or the row has no TPQ."""

    value: float | None
    baseline: int
    baseline_pool: float


def assign_tper(rows: Sequence[EfficiencyRow]) -> list[Tper | None]:
    """Each row's TPER, in row order: None for a row without a pool or alone in its group
    with one. The baseline is the smallest pool of the group, the earliest row on a tie."""
    pools: dict[Hashable, list[tuple[int, float]]] = {}
    for position, row in enumerate(rows):
        if row.pool_size is not None:
            pools.setdefault(row.group, []).append((position, row.pool_size))
    result: list[Tper | None] = [None] * len(rows)
    for members in pools.values():
        if len(members) < 2:
            continue
        # min keeps the first of equal pools: the earliest row, a stable choice.
        base, base_pool = min(members, key=lambda member: member[1])
        base_tpq = rows[base].tpq_s
        for position, pool in members:
            tpq = rows[position].tpq_s
            value = (None if tpq is None or base_tpq is None
                     else tper(tpq, pool, base_tpq, base_pool))
            result[position] = Tper(value=value, baseline=base, baseline_pool=base_pool)
    return result
