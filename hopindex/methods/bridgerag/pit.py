"""Percentile-rank (PIT) fusion of judge and SVO scores (paper Eqs. 5-6).

PIT maps each signal onto the pool's own percentiles, so a categorical 0-10 judge
score and a cosine become commensurable before the convex combination.

Ties. PIT follows Eq. 5 literally: every candidate with an equal score counts, so
a tied group shares the percentile of its top (three candidates tied at the best
judge score all get 1.0). Judge scores are small integers, so fused scores tie
too; the ranking breaks such ties by the SVO max-cosine, then by pool order
(the pool's max retrieval score, then unit id), so a ranking repeats exactly.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence


def pit(scores: Sequence[float | None]) -> list[float]:
    """PIT(s, c) = |{c' in pool : s(c') <= s(c)}| / |pool| for each candidate, in order.

    None (a candidate the judge left unscored) ranks below every score; unscored
    candidates tie with each other.
    """
    values = [-math.inf if s is None else s for s in scores]
    ordered = sorted(values)
    n = len(values)
    return [bisect.bisect_right(ordered, v) / n for v in values]


def fuse_pit(judge: Sequence[float | None], svo: Sequence[float], alpha: float) -> list[float]:
    """f(c) = (1 - alpha) * PIT(judge, c) + alpha * PIT(svo, c)."""
    if len(judge) != len(svo):
        raise ValueError("judge and SVO scores must cover the same pool")
    return [(1.0 - alpha) * j + alpha * s for j, s in zip(pit(judge), pit(svo), strict=True)]


def rank_positions(primary: Sequence[float], tiebreak: Sequence[float]) -> list[int]:
    """Pool positions, best first: by ``primary`` descending, then ``tiebreak``
    descending, then position (the pool's own order)."""
    return sorted(range(len(primary)), key=lambda i: (-primary[i], -tiebreak[i], i))
