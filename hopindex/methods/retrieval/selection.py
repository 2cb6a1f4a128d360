"""Balanced context selection (IndexRAG, Algorithm 1).

Bridging facts are short (166 vs. 634 characters on average in the paper), so
letting them fill the context displaces the AKUs that hold most of the evidence;
capping them at ``k_b`` keeps both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from hopindex.core.models import ScoredUnit, Unit, UnitKind

K = 10
K_BRIDGE = 3

R = TypeVar("R", Unit, ScoredUnit)


def balanced_selection(ranked_units: Sequence[R], k: int = K, k_b: int = K_BRIDGE) -> list[R]:
    """Walk the ranking: take every non-bridge unit (AKUs, passages), bridges only while
    fewer than ``k_b`` are taken; stop once ``k`` are taken. Order is kept."""
    if k < 0 or k_b < 0:
        raise ValueError("k and k_b must not be negative")
    chosen: list[R] = []
    bridges = 0
    for item in ranked_units:
        if len(chosen) >= k:
            break
        # ==, not is: units read back from storage may carry the plain string.
        is_bridge = _kind(item) == UnitKind.BRIDGE
        if is_bridge and bridges >= k_b:
            continue
        chosen.append(item)
        if is_bridge:
            bridges += 1
    return chosen


def _kind(item: Unit | ScoredUnit) -> str:
    return item.unit.kind if isinstance(item, ScoredUnit) else item.kind
