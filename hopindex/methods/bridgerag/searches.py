"""The hop-2 ANN passes: one per SVO query and one per distinct entity.

All their texts are embedded in one batch (the embedder's per-call cost dominates
for a handful of short texts), then each is searched on its own, dense, whatever
the hop-1 retrieval: the pool and the SVO scores are cosines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hopindex.backends.protocols import UnitFilter, Vector
from hopindex.core.models import Hit
from hopindex.methods.base import SearchContext
from hopindex.methods.bridgerag.pool import Source
from hopindex.methods.phases import PhaseTimer, QueryPhase


@dataclass(slots=True)
class Hop2Hits:
    svo_vectors: Vector  # one row per SVO query, for direct cosines later
    svo_lists: list[list[Hit]]
    entity_lists: list[tuple[Source, list[Hit]]]
    phases_s: dict[str, float] = field(default_factory=dict)

    @property
    def searches(self) -> int:
        return len(self.svo_lists) + len(self.entity_lists)


def search_hop2(context: SearchContext, index: str, queries: Sequence[str],
                entities: Sequence[tuple[Source, str]], *, svo_k: int, entity_k: int,
                unit_filter: UnitFilter | None) -> Hop2Hits:
    timer = PhaseTimer()
    with timer.phase(QueryPhase.EMBED):
        vectors = context.embedder.embed_texts([*queries, *(text for _, text in entities)])
    n = len(queries)
    with timer.phase(QueryPhase.DENSE_SEARCH):
        svo_lists = [context.vectors.search_vectors(index, vectors[i], svo_k, unit_filter)
                     for i in range(n)]
        entity_lists = [(source, context.vectors.search_vectors(index, vectors[n + j],
                                                                entity_k, unit_filter))
                        for j, (source, _) in enumerate(entities)]
    return Hop2Hits(svo_vectors=vectors[:n], svo_lists=svo_lists, entity_lists=entity_lists,
                    phases_s=timer.phases_s)
