"""Query side of ``extractive``: hybrid search over passages and bridges, then expansion."""

from __future__ import annotations

import time
from collections import Counter

from hopindex.methods.base import (
    QueryOptions,
    QueryResult,
    Retrieval,
    SearchContext,
)
from hopindex.methods.phases import PhaseTimer, QueryPhase
from hopindex.methods.retrieval.expansion import expand_to_passages
from hopindex.methods.retrieval.search import RETRIEVAL_STEP, retrieve_candidates


class ExtractiveMethod:
    name = "extractive"

    def __init__(self, context: SearchContext) -> None:
        self._context = context

    def run_query(self, index: str, question: str, options: QueryOptions) -> QueryResult:
        started = time.perf_counter()
        retrieval = options.retrieval or Retrieval.HYBRID
        timer = PhaseTimer()
        found = retrieve_candidates(self._context, index, question, options,
                                    retrieval=retrieval, rerank_step=RETRIEVAL_STEP)
        timer.add_all(found.phases_s)
        with timer.phase(QueryPhase.EXPAND):
            passages = expand_to_passages(index, found.hits, found.units, self._context.units,
                                          options.k)
        kinds = Counter(found.units[h.unit_id].kind.value for h in found.hits[: options.k])
        result = QueryResult(
            question=question, method=self.name, index=index, passages=passages,
            trace={"retrieval": retrieval.value, "fusion": options.fusion.value,
                   "engines": found.engines, "top_k_unit_kinds": dict(kinds)},
        )
        result.usage.phases_s = timer.phases_s
        result.latency_s = time.perf_counter() - started
        return result

