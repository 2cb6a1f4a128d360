"""Dense, keyword and hybrid candidate retrieval, timed per phase."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from hopindex.backends.protocols import UnitFilter
from hopindex.core.models import Hit, Unit
from hopindex.methods.base import QueryOptions, Retrieval, SearchContext
from hopindex.methods.retrieval.fusion import FusionMode, fuse


@dataclass(slots=True)
class Candidates:
    """Fused hits resolved to units, best first, with the time each phase took."""

    hits: list[Hit]
    units: dict[str, Unit]
    phases_s: dict[str, float]
    engines: dict[str, int]


def retrieve_candidates(context: SearchContext, index: str, question: str,
                        options: QueryOptions, *, retrieval: Retrieval,
                        unit_filter: UnitFilter | None = None) -> Candidates:
    phases: dict[str, float] = {}
    lists: list[Sequence[Hit]] = []
    engines: dict[str, int] = {}
    if retrieval in (Retrieval.DENSE, Retrieval.HYBRID):
        t0 = time.perf_counter()
        vector = context.embedder.embed_query(question)
        t1 = time.perf_counter()
        dense = context.vectors.search_vectors(index, vector, options.candidate_count, unit_filter)
        t2 = time.perf_counter()
        phases["embed"] = t1 - t0
        phases["dense_search"] = t2 - t1
        lists.append(dense)
        engines["dense"] = len(dense)
    if retrieval in (Retrieval.KEYWORD, Retrieval.HYBRID):
        t0 = time.perf_counter()
        keyword = context.keywords.search_text(index, question, options.candidate_count,
                                               unit_filter)
        phases["keyword_search"] = time.perf_counter() - t0
        lists.append(keyword)
        engines["keyword"] = len(keyword)
    t0 = time.perf_counter()
    mode = options.fusion if len(lists) > 1 else FusionMode.NONE
    hits = fuse(lists, mode)
    phases["fusion"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    units = {u.unit_id: u for u in context.units.get_units(index, [h.unit_id for h in hits])}
    phases["load_units"] = time.perf_counter() - t0
    # A hit whose unit vanished (deleted between search and load) is dropped, not failed.
    hits = [h for h in hits if h.unit_id in units]
    return Candidates(hits=hits, units=units, phases_s=phases, engines=engines)
