"""``hops``: hop 1 as ``extractive`` ranks it, then second hops found without an LLM.

Up to four document lists are fused by weighted reciprocal rank: hop 1's documents;
those of them whose title the question names; the documents reached by walking from
the seed documents (named ones, then hop 1's best) through their bridge units, each
bridge scored by its stored vector's cosine with the question; and, when asked, a
dense pseudo-relevance-feedback search. The trace names every seed, every bridge
walked and, for each passage returned, its rank in each list.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from hopindex.backends.protocols import UnitFilter
from hopindex.core.models import UnitKind
from hopindex.methods.base import (
    Degradation,
    QueryOptions,
    QueryResult,
    Retrieval,
    SearchContext,
)
from hopindex.methods.hops.chain import Chained, ChainStarts, follow_chain
from hopindex.methods.hops.graph import (
    RankedDoc,
    document_titles,
    fuse_documents,
    hop1_documents,
    named_documents,
    walk_bridges,
)
from hopindex.methods.hops.params import Chain, Feedback, HopsParams, Named, Walk
from hopindex.methods.phases import PhaseTimer, QueryPhase
from hopindex.methods.retrieval.expansion import show_documents
from hopindex.methods.retrieval.search import Candidates, retrieve_candidates

_PASSAGES = UnitFilter(kinds=(UnitKind.PASSAGE,))
NAMED_WITHIN = 30
WALK_STEP = "walk"
SEED_STEP = "seed"


class HopsMethod:
    name = "hops"

    def __init__(self, context: SearchContext) -> None:
        self._context = context

    def run_query(self, index: str, question: str, options: QueryOptions) -> QueryResult:
        started = time.perf_counter()
        params = HopsParams.from_params(options.params)
        context = self._context
        retrieval = options.retrieval or Retrieval.HYBRID
        timer = PhaseTimer()
        # The seed retrieval is reranked against the question; the walk is not: its
        # documents are relevant to the bridge, which a reader of the question alone
        # would push down, undoing what the walk is for.
        found = retrieve_candidates(context, index, question, replace(options, params={}),
                                    retrieval=retrieval, rerank_step=SEED_STEP)
        timer.add_all(found.phases_s)
        degraded: list[Degradation] = []
        with timer.phase(QueryPhase.EXPAND):
            hop1 = hop1_documents(found.hits, found.units)
            named: list[RankedDoc] = []
            if params.named is Named.TITLES:
                # The question names what it asks about within hop 1's first places:
                # titles further down are too many to read per query.
                considered = hop1[:NAMED_WITHIN]
                named = named_documents(question, considered, document_titles(
                    index, considered, found.units, context.documents))
            seeds = list(dict.fromkeys([d.doc_id for d in named]
                                       + [d.doc_id for d in hop1[: params.seeds]]))
        walked_steps: list[dict[str, object]] = []
        walked: list[RankedDoc] = []
        if params.walk is Walk.BRIDGES:
            with timer.phase(QueryPhase.WALK):
                if found.vector is None:
                    degraded.append(Degradation(WALK_STEP, "keyword-only retrieval has no "
                                                           "question vector: no bridge walk"))
                else:
                    walk = walk_bridges(index, found.vector, seeds, units=context.units,
                                        vectors=context.vectors,
                                        catalogue=context.catalogue,
                                        sibling_factor=params.sibling_factor)
                    walked, walked_steps = walk.docs[: params.walk_docs], walk.steps
                    if not walk.steps:
                        degraded.append(Degradation(
                            WALK_STEP, "no bridge units next to the seed documents (an index "
                                       "without shared entities): hop 1 alone"))
        chained = Chained()
        if params.chain is not Chain.OFF:
            with timer.phase(QueryPhase.WALK):
                chained = follow_chain(context, index, question, found, params=params,
                                       options=options, retrieval=retrieval,
                                       starts=ChainStarts(named, hop1, seeds, walked))
        feedback: list[RankedDoc] = []
        if params.feedback is Feedback.DENSE:
            with timer.phase(QueryPhase.WALK):
                feedback = self._feedback(index, found, params, options.candidate_count)
        lists = [("hop1", params.hop1_weight, hop1), ("named", params.named_weight, named),
                 ("walk", params.walk_weight, walked),
                 ("feedback", params.feedback_weight, feedback), *chained.lists]
        with timer.phase(QueryPhase.FUSION):
            fused = fuse_documents([entry for entry in lists if entry[2] and entry[1] > 0],
                                   params.rrf_k)[: options.k]
        with timer.phase(QueryPhase.EXPAND):
            units = dict(found.units)
            units.update({d.unit.unit_id: d.unit for d, _, _ in fused})
            passages = show_documents(index, [(d.doc_id, score, d.unit) for d, score, _ in fused],
                                      units, found.hits, context.units,
                                      documents=context.documents)
        titles = {p.doc_id: p.title for p in passages}
        result = QueryResult(
            question=question, method=self.name, index=index, passages=passages,
            trace={"retrieval": retrieval.value, "fusion": options.fusion.value,
                   "engines": found.engines, "params": params.as_dict(),
                   "seeds": seeds, "named": [d.doc_id for d in named],
                   "walk": walked_steps[:20], "chain": chained.steps,
                   "ranks": [{"doc_id": d.doc_id, "title": titles.get(d.doc_id, ""),
                              "score": round(score, 6), "lists": ranks}
                             for d, score, ranks in fused]},
            degraded=degraded,
        )
        result.usage.phases_s = timer.phases_s
        result.latency_s = time.perf_counter() - started
        return result

    def _feedback(self, index: str, found: Candidates, params: HopsParams,
                  count: int) -> list[RankedDoc]:
        """One more dense search, the question's vector moved towards the top hop-1
        passages' stored vectors (Rocchio's feedback without judgements)."""
        if found.vector is None:
            return []
        top = [h.unit_id for h in found.hits
               if found.units[h.unit_id].kind == UnitKind.PASSAGE][: params.feedback_docs]
        stored = [np.asarray(r.vector, dtype=np.float32)
                  for r in self._context.vectors.get_vectors(index, top)]
        if not stored:
            return []
        query = np.asarray(found.vector, dtype=np.float32)
        moved = query + params.feedback_beta * np.mean(stored, axis=0)
        moved = (moved / (float(np.linalg.norm(moved)) or 1.0)).astype(np.float32)
        hits = self._context.vectors.search_vectors(index, moved, count, _PASSAGES)
        units = {u.unit_id: u for u in self._context.units.get_units(
            index, [h.unit_id for h in hits])}
        return hop1_documents([h for h in hits if h.unit_id in units], units)
