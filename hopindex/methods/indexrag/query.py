"""Query side of ``indexrag``: retrieve 20, balanced selection, one answer call.

Over an IndexRAG index the pool is AKUs and bridging facts; over any other index
it is whatever units the index holds (passages, extractive bridges), so the method
also answers from indexes built without an LLM.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace

from hopindex.backends.protocols import UnitFilter
from hopindex.core.models import UnitKind
from hopindex.methods.base import (
    Degradation,
    QueryOptions,
    QueryResult,
    Retrieval,
    SearchContext,
)
from hopindex.methods.indexrag.units import METHOD
from hopindex.methods.llm_steps import ANSWER_STEP, llm_step
from hopindex.methods.phases import PhaseTimer, QueryPhase
from hopindex.methods.retrieval.answer import answer_request
from hopindex.methods.retrieval.expansion import expand_to_passages
from hopindex.methods.retrieval.kinds import FACTS, preferred_filter
from hopindex.methods.retrieval.search import retrieve_candidates
from hopindex.methods.retrieval.selection import K_BRIDGE, K, balanced_selection

RETRIEVE_K = 20


def unit_filter_for(held: frozenset[UnitKind]) -> UnitFilter | None:
    """AKUs and bridging facts when the index holds them; else every unit."""
    return preferred_filter(held, (FACTS,))


class IndexRagMethod:
    name = METHOD

    def __init__(self, context: SearchContext) -> None:
        self._context = context

    def run_query(self, index: str, question: str, options: QueryOptions) -> QueryResult:
        started = time.perf_counter()
        llm = self._context.require_llm(self.name)
        retrieval = options.retrieval or Retrieval.DENSE
        # The paper's pool is the top 20; a larger k (for Recall@k) widens it.
        pool_size = max(RETRIEVE_K, options.k)
        searched = replace(options, candidates=options.candidates or pool_size)
        timer = PhaseTimer()
        found = retrieve_candidates(self._context, index, question, searched,
                                    retrieval=retrieval,
                                    unit_filter=unit_filter_for(self._context.kinds_of(index)))
        timer.add_all(found.phases_s)
        pool = [found.units[h.unit_id] for h in found.hits[:pool_size]]
        chosen = balanced_selection(pool, K, K_BRIDGE)
        usage = self._context.query_usage()
        degraded: list[Degradation] = []
        with timer.phase(QueryPhase.ANSWER):
            reply = llm_step(degraded, ANSWER_STEP, lambda: llm.complete(
                answer_request(question, [u.text for u in chosen]), usage))
        with timer.phase(QueryPhase.EXPAND):
            passages = expand_to_passages(index, found.hits[:pool_size], found.units,
                                          self._context.units, options.k,
                                          documents=self._context.documents)
        result = QueryResult(
            question=question, method=self.name, index=index, passages=passages,
            answer=reply.content.strip() if reply is not None else None,
            trace={"retrieval": retrieval.value, "engines": found.engines,
                   "pool": len(pool),
                   "selected": [{"unit_id": u.unit_id, "kind": u.kind.value} for u in chosen],
                   "selected_kinds": dict(Counter(u.kind.value for u in chosen))},
            degraded=degraded, answer_truncated=reply is not None and reply.truncated,
        )
        result.usage.add_llm(usage.total())
        result.usage.phases_s = timer.phases_s
        result.latency_s = time.perf_counter() - started
        return result

