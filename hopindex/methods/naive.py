"""``naive``: passages only, dense by default (hybrid with ``retrieval=hybrid``)."""

from __future__ import annotations

import time

from hopindex.backends.protocols import UnitFilter
from hopindex.core.models import UnitKind
from hopindex.methods.base import (
    QueryOptions,
    QueryResult,
    Retrieval,
    SearchContext,
)
from hopindex.methods.phases import PhaseTimer, QueryPhase
from hopindex.methods.plugin import LlmUse, MethodRegistry, QueryMethodSpec
from hopindex.methods.retrieval.expansion import expand_to_passages
from hopindex.methods.retrieval.search import RETRIEVAL_STEP, retrieve_candidates

_PASSAGES = UnitFilter(kinds=(UnitKind.PASSAGE,))


class NaiveMethod:
    name = "naive"

    def __init__(self, context: SearchContext) -> None:
        self._context = context

    def run_query(self, index: str, question: str, options: QueryOptions) -> QueryResult:
        started = time.perf_counter()
        retrieval = options.retrieval or Retrieval.DENSE
        timer = PhaseTimer()
        found = retrieve_candidates(self._context, index, question, options,
                                    retrieval=retrieval, unit_filter=_PASSAGES,
                                    rerank_step=RETRIEVAL_STEP)
        timer.add_all(found.phases_s)
        with timer.phase(QueryPhase.EXPAND):
            passages = expand_to_passages(index, found.hits, found.units, self._context.units,
                                          options.k)
        result = QueryResult(question=question, method=self.name, index=index,
                             passages=passages,
                             trace={"retrieval": retrieval.value, "engines": found.engines})
        result.usage.phases_s = timer.phases_s
        result.latency_s = time.perf_counter() - started
        return result



def register(registry: MethodRegistry) -> None:
    registry.add_query_method(QueryMethodSpec(
        name=NaiveMethod.name, factory=NaiveMethod, reads=frozenset({UnitKind.PASSAGE}),
        llm_use=LlmUse.NONE, summary="passages only, dense by default"))
