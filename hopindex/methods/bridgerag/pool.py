"""The candidate pool: the union of SVO-15, e1-top-5 and e2-top-5, the top 20 by max
score (Eq. 4).

Every score here is a cosine from the same index, so "max score" compares like with
like. A candidate's SVO score is its max cosine to any SVO query: known from the SVO
searches when one of them returned it (even below the SVO-15 cut), else computed
directly from its stored vector (docs/methods.md: "candidates found only by entity
search get their SVO score by direct cosine").
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hopindex.backends.protocols import Vector
from hopindex.core.models import Hit


class Source(enum.StrEnum):
    """Which retrieval put a candidate in the pool."""

    SVO = "svo"
    E1 = "e1"
    E2 = "e2"


@dataclass(frozen=True, slots=True)
class Candidate:
    unit_id: str
    pool_score: float  # max over the retrievals that put it in the pool: the pool's order
    found_by: tuple[Source, ...]
    svo_score: float | None  # None until computed by direct cosine


def union_max(lists: Sequence[Sequence[Hit]]) -> dict[str, float]:
    """Each unit's best score over several hit lists (the paper's union_max)."""
    best: dict[str, float] = {}
    for hits in lists:
        for hit in hits:
            if hit.score > best.get(hit.unit_id, -math.inf):
                best[hit.unit_id] = hit.score
    return best


def top_scores(scores: dict[str, float], n: int) -> list[tuple[str, float]]:
    """The ``n`` best (unit id, score) pairs; ties by unit id, so the cut repeats exactly."""
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def build_pool(svo_lists: Sequence[Sequence[Hit]],
               entity_lists: Sequence[tuple[Source, Sequence[Hit]]], *, svo_keep: int,
               pool_size: int) -> list[Candidate]:
    """The pool in its own order (max score, then unit id), at most ``pool_size``."""
    svo_all = union_max(svo_lists)
    scores = dict(top_scores(svo_all, svo_keep))
    found: dict[str, list[Source]] = {unit_id: [Source.SVO] for unit_id in scores}
    for source, hits in entity_lists:
        for hit in hits:
            if hit.score > scores.get(hit.unit_id, -math.inf):
                scores[hit.unit_id] = hit.score
            sources = found.setdefault(hit.unit_id, [])
            if source not in sources:
                sources.append(source)
    return [Candidate(unit_id=unit_id, pool_score=score, found_by=tuple(found[unit_id]),
                      svo_score=svo_all.get(unit_id))
            for unit_id, score in top_scores(scores, pool_size)]


def max_cosines(query_vectors: Vector, unit_vectors: Vector) -> list[float]:
    """For each unit vector, its max cosine to any query vector (rows are unit length)."""
    if len(unit_vectors) == 0:
        return []
    if len(query_vectors) == 0:
        return [0.0] * len(unit_vectors)
    similarity = np.asarray(unit_vectors, dtype=np.float32) @ np.asarray(
        query_vectors, dtype=np.float32).T
    return [float(v) for v in similarity.max(axis=1)]
