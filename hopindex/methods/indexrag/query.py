"""Query side of ``indexrag``: retrieve 20 (more while the balanced selection holds
fewer than k), balanced selection, one answer call.

Over an IndexRAG index the pool is AKUs and bridging facts; over any other index
it is whatever units the index holds (passages, extractive bridges), so the method
also answers from indexes built without an LLM.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from hopindex.backends.protocols import UnitFilter
from hopindex.core.models import Unit, UnitKind
from hopindex.methods.base import (
    Degradation,
    QueryOptions,
    QueryResult,
    Retrieval,
    SearchContext,
)
from hopindex.methods.indexrag.units import METHOD, RETRIEVE_K
from hopindex.methods.llm_steps import answer_step
from hopindex.methods.phases import PhaseTimer, QueryPhase
from hopindex.methods.retrieval.answer import (
    AnswerStyle,
    answer_style_of,
    cite_answer,
    request_for,
)
from hopindex.methods.retrieval.expansion import expand_to_passages
from hopindex.methods.retrieval.kinds import FACTS, preferred_filter
from hopindex.methods.retrieval.search import RETRIEVAL_STEP, Candidates, retrieve_candidates
from hopindex.methods.retrieval.selection import K_BRIDGE, K, balanced_selection


def unit_filter_for(held: frozenset[UnitKind]) -> UnitFilter | None:
    """AKUs and bridging facts when the index holds them; else every unit."""
    return preferred_filter(held, (FACTS,))


def selected_from_pages(search: Callable[[int, Candidates | None], Candidates], first: int,
                        limit: int, k: int = K, k_b: int = K_BRIDGE
                        ) -> tuple[Candidates, list[Unit], int]:
    """Algorithm 1 walks the ranking of every entry until it holds ``k``; bridging
    facts crowd the top of it (they are short), so the first ``first`` candidates may
    hold fewer than ``k`` that it may take. Fetch ``RETRIEVE_K`` more at a time
    (``search(count, previous)``) until ``k`` are selected, the engines return fewer
    than asked (the index is exhausted), or ``limit`` candidates were fetched (our
    bound on the searches, ``HOPINDEX_INDEXRAG_MAX_CANDIDATES``). Returns the last
    search, the units selected from its whole ranking and the candidates it asked for.
    """
    count = first
    found = search(count, None)
    while True:
        ranked = [found.units[h.unit_id] for h in found.hits]
        chosen = balanced_selection(ranked, k, k_b)
        exhausted = all(n < count for n in found.engines.values())
        if len(chosen) >= k or exhausted or count >= limit:
            return found, chosen, count
        count = min(count + RETRIEVE_K, limit)
        found = search(count, found)


class IndexRagMethod:
    name = METHOD

    def __init__(self, context: SearchContext) -> None:
        self._context = context

    def run_query(self, index: str, question: str, options: QueryOptions) -> QueryResult:
        started = time.perf_counter()
        llm = self._context.require_llm(self.name)
        style = answer_style_of(options)  # a bad option is refused before any LLM call
        retrieval = options.retrieval or Retrieval.DENSE
        # The paper's pool is the top 20; a larger k (for Recall@k) widens it.
        pool_size = max(RETRIEVE_K, options.k)
        first = options.candidates or pool_size
        limit = max(first, self._context.method_settings(METHOD).max_candidates)
        unit_filter = unit_filter_for(self._context.kinds_of(index))
        timer = PhaseTimer()

        def search(count: int, previous: Candidates | None) -> Candidates:
            # A deeper page searches again with the question's vector already made.
            page = retrieve_candidates(self._context, index, question,
                                       replace(options, candidates=count),
                                       retrieval=retrieval, unit_filter=unit_filter,
                                       vector=previous.vector if previous else None,
                                       rerank_step=RETRIEVAL_STEP)
            timer.add_all(page.phases_s)
            return page

        found, chosen, fetched = selected_from_pages(search, first, limit)
        usage = self._context.query_usage()
        degraded: list[Degradation] = []
        with timer.phase(QueryPhase.EXPAND):
            passages = expand_to_passages(index, found.hits[:pool_size], found.units,
                                          self._context.units, options.k,
                                          documents=self._context.documents)
        with timer.phase(QueryPhase.ANSWER):
            reply = answer_step(self._context, degraded, llm, request_for(
                style, question, [u.text for u in chosen]), usage, passages=passages)
        trace = {"retrieval": retrieval.value, "engines": found.engines,
                 "pool": len(found.hits), "candidates": fetched,
                 "selected": [{"unit_id": u.unit_id, "kind": u.kind.value} for u in chosen],
                 "selected_kinds": dict(Counter(u.kind.value for u in chosen))}
        answer = reply.content.strip() if reply is not None else None
        if answer is not None and style is AnswerStyle.CITED:
            answer, trace["answer_citations"] = cite_answer(answer, chosen, passages)
        result = QueryResult(
            question=question, method=self.name, index=index, passages=passages,
            answer=answer, trace=trace,
            degraded=degraded, answer_truncated=reply is not None and reply.truncated,
        )
        result.usage.add_llm(usage.total())
        result.usage.phases_s = timer.phases_s
        result.latency_s = time.perf_counter() - started
        return result

