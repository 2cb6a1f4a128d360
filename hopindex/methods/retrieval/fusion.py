"""Rank fusion of several hit lists into one.

Reciprocal rank fusion (Cormack et al., 2009) needs no score calibration;
percentile-rank fusion keeps each retriever's rank spread on a common [0, 1]
scale, which BridgeRAG's PIT fusion also uses.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from hopindex.core.models import Hit
from hopindex.methods.base import FusionMode

RRF_K = 60


# Orders hits of equal score. Unit ids hash the index's name, so breaking ties on them
# would rank one corpus differently under two names; callers that hold the units pass
# a key of their content (``content_key``).
TieKey = Callable[[str], str]


def _by_id(unit_id: str) -> str:
    return unit_id


def reciprocal_rank_fusion(lists: Sequence[Sequence[Hit]], *, rrf_k: int = RRF_K,
                           weights: Sequence[float] | None = None,
                           tie_key: TieKey = _by_id) -> list[Hit]:
    scores: dict[str, float] = defaultdict(float)
    for i, hits in enumerate(lists):
        weight = 1.0 if weights is None else weights[i]
        for rank, hit in enumerate(hits):
            scores[hit.unit_id] += weight / (rrf_k + rank + 1)
    return _ranked(scores, tie_key)


def percentile_rank_fusion(lists: Sequence[Sequence[Hit]],
                           weights: Sequence[float] | None = None,
                           tie_key: TieKey = _by_id) -> list[Hit]:
    """Each list gives its hit at rank r of n the score 1 - r/n; scores add across lists."""
    scores: dict[str, float] = defaultdict(float)
    for i, hits in enumerate(lists):
        weight = 1.0 if weights is None else weights[i]
        n = len(hits)
        for rank, hit in enumerate(hits):
            scores[hit.unit_id] += weight * (1.0 - rank / n)
    return _ranked(scores, tie_key)


def fuse(lists: Sequence[Sequence[Hit]], mode: FusionMode,
         weights: Sequence[float] | None = None, *, tie_key: TieKey = _by_id) -> list[Hit]:
    if weights is not None and len(weights) != len(lists):
        raise ValueError("fusion weights must match the number of hit lists")
    if mode is FusionMode.RRF:
        return reciprocal_rank_fusion(lists, weights=weights, tie_key=tie_key)
    if mode is FusionMode.PERCENTILE:
        return percentile_rank_fusion(lists, weights=weights, tie_key=tie_key)
    return list(lists[0]) if lists else []


def order_hits(hits: Sequence[Hit], tie_key: TieKey) -> list[Hit]:
    """One engine's hits by score, equal scores in ``tie_key`` order: engines return
    exact ties (two copies of a text, two texts with one term) in storage order."""
    return sorted(hits, key=lambda hit: (-hit.score, tie_key(hit.unit_id)))


def _ranked(scores: dict[str, float], tie_key: TieKey) -> list[Hit]:
    # Ties break on a fixed key so rankings repeat exactly across runs.
    return [Hit(unit_id, score)
            for unit_id, score in sorted(scores.items(),
                                         key=lambda kv: (-kv[1], tie_key(kv[0])))]
