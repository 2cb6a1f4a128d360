"""Rank fusion of several hit lists into one.

Reciprocal rank fusion (Cormack et al., 2009) needs no score calibration;
percentile-rank fusion keeps each retriever's rank spread on a common [0, 1]
scale, which BridgeRAG's PIT fusion also uses.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from hopindex.core.models import Hit
from hopindex.methods.base import FusionMode

RRF_K = 60


def reciprocal_rank_fusion(lists: Sequence[Sequence[Hit]], *, rrf_k: int = RRF_K,
                           weights: Sequence[float] | None = None) -> list[Hit]:
    scores: dict[str, float] = defaultdict(float)
    for i, hits in enumerate(lists):
        weight = 1.0 if weights is None else weights[i]
        for rank, hit in enumerate(hits):
            scores[hit.unit_id] += weight / (rrf_k + rank + 1)
    return _ranked(scores)


def percentile_rank_fusion(lists: Sequence[Sequence[Hit]],
                           weights: Sequence[float] | None = None) -> list[Hit]:
    """Each list gives its hit at rank r of n the score 1 - r/n; scores add across lists."""
    scores: dict[str, float] = defaultdict(float)
    for i, hits in enumerate(lists):
        weight = 1.0 if weights is None else weights[i]
        n = len(hits)
        for rank, hit in enumerate(hits):
            scores[hit.unit_id] += weight * (1.0 - rank / n)
    return _ranked(scores)


def fuse(lists: Sequence[Sequence[Hit]], mode: FusionMode,
         weights: Sequence[float] | None = None) -> list[Hit]:
    if weights is not None and len(weights) != len(lists):
        raise ValueError("fusion weights must match the number of hit lists")
    if mode is FusionMode.RRF:
        return reciprocal_rank_fusion(lists, weights=weights)
    if mode is FusionMode.PERCENTILE:
        return percentile_rank_fusion(lists, weights=weights)
    return list(lists[0]) if lists else []


def _ranked(scores: dict[str, float]) -> list[Hit]:
    # Ties break on the unit id so rankings repeat exactly across runs.
    return [Hit(unit_id, score)
            for unit_id, score in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]
