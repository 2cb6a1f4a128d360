"""Cumulative LLM tokens against the number of queries served: where an index's offline
cost is paid back.

Each row of a run is a straight line, C(N) = B + N * q: B the tokens it took to build
the index the row queried, q the row's mean (prompt + completion) tokens per query. A
method with a costly build and cheap queries (CompactRAG) starts higher and grows
slower; where its line crosses a cheaper-to-build one is the break-even number of
queries. Two lines cross at most once, at N* = (B_a - B_b) / (q_b - q_a); they never
cross for N > 0 when they are parallel, start together, or the costlier build also
costs more per query.

Pure: plain numbers in and out, so report.py can import it and tests can check the
arithmetic by hand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

# The horizon never ends before this many queries, so a run without any crossing still
# shows how the lines part.
MIN_HORIZON = 1_000
# The default horizon runs this much past the last crossing, so the crossing is visible.
_HORIZON_MARGIN = 1.25
# Points along each line: enough for a smooth line when the y axis is logarithmic.
_STEPS = 200
# Curves whose positive values span more than this ratio are drawn on a log axis.
LOG_SPAN = 100.0


@dataclass(frozen=True, slots=True)
class TokenCurve:
    """One row's line: ``label`` as the report names the row."""

    label: str
    build_tokens: float
    tokens_per_query: float

    def at(self, queries: float) -> float:
        """Cumulative tokens after ``queries`` queries, the build included."""
        return self.build_tokens + queries * self.tokens_per_query


@dataclass(frozen=True, slots=True)
class BreakEven:
    """``payer`` built for more tokens than ``against`` and pays less per query: from
    ``queries`` queries on (``at`` rounded up) it has used no more tokens in all."""

    payer: str
    against: str
    at: float
    queries: int

    @property
    def note(self) -> str:
        return (f"{self.payer} pays back its build against {self.against} after "
                f"{self.queries:,} queries")


def break_even(a: TokenCurve, b: TokenCurve) -> BreakEven | None:
    """Where the two lines cross at some N > 0, or None: parallel, equal builds (they
    start together and only part), or the costlier build is also costlier per query."""
    payer, other = (a, b) if a.build_tokens >= b.build_tokens else (b, a)
    extra_build = payer.build_tokens - other.build_tokens
    saved_per_query = other.tokens_per_query - payer.tokens_per_query
    if extra_build <= 0 or saved_per_query <= 0:
        return None
    at = extra_build / saved_per_query
    # Rounded first: 1000.0000000001 from float division is the 1,000th query, not 1,001st.
    return BreakEven(payer=payer.label, against=other.label, at=at,
                     queries=max(1, math.ceil(round(at, 6))))


def break_evens(curves: Sequence[TokenCurve]) -> list[BreakEven]:
    """Every crossing between two of the curves, soonest first (pair order on a tie)."""
    found = [point for a, b in combinations(curves, 2)
             if (point := break_even(a, b)) is not None]
    return sorted(found, key=lambda point: point.at)


def _round_up_nicely(value: float) -> int:
    """The smallest 1, 2 or 5 * 10^k at or above ``value``: an axis end that reads well."""
    if value <= 1:
        return 1
    scale = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * scale >= value:
            return int(step * scale)
    return int(10 * scale)  # unreachable: 10 * scale exceeds value


def default_horizon(curves: Sequence[TokenCurve]) -> int:
    """Queries enough to pass the last crossing with a margin, and at least MIN_HORIZON."""
    points = break_evens(curves)
    if not points:
        return MIN_HORIZON
    last = max(point.at for point in points)
    return max(MIN_HORIZON, _round_up_nicely(last * _HORIZON_MARGIN))


def query_points(horizon: int) -> list[int]:
    """Whole numbers of queries from 0 to ``horizon``, both included, at most
    _STEPS + 1 of them, evenly spread."""
    if horizon < 0:
        raise ValueError(f"a horizon is 0 or more queries, got {horizon}")
    steps = min(horizon, _STEPS)
    if steps == 0:
        return [0]
    return sorted({round(horizon * i / steps) for i in range(steps + 1)})


def curve_points(curve: TokenCurve, horizon: int) -> list[tuple[int, float]]:
    """(N, C(N)) along the curve up to ``horizon`` queries."""
    return [(n, curve.at(n)) for n in query_points(horizon)]


def needs_log_scale(curves: Sequence[TokenCurve], horizon: int) -> bool:
    """True when the positive values drawn span more than LOG_SPAN (two decades): a
    linear axis would flatten the cheap curves onto zero."""
    values = [value for curve in curves for _, value in curve_points(curve, horizon)
              if value > 0]
    return bool(values) and max(values) / min(values) > LOG_SPAN
