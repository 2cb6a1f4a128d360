"""Query side of ``sirerag``: the top nodes of one flat pool, one answer call.

The pool is every node of both trees: passages, proposition aggregates and the
summaries of both (``pool=similarity``: passages and the similarity tree's
summaries only, RAPTOR's pool over the same index, for the paper's TPER). The top
``top_k`` nodes by cosine are the answer call's context, asked with the paper's answer
prompt (``answer_prompt=indexrag``: IndexRAG's, which ``indexrag`` and ``ircot`` send).
Passages are reported through provenance: walking the nodes in rank order, a passage
stands for itself and an aggregate or summary for the passages beneath it, those
nearest the question first, until ``k`` documents are found.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from hopindex.backends.protocols import UnitFilter
from hopindex.core.citations import passage_citation
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import Unit, UnitKind
from hopindex.methods.base import (
    Degradation,
    QueryOptions,
    QueryResult,
    RankedPassage,
    SearchContext,
)
from hopindex.methods.llm_steps import answer_step
from hopindex.methods.phases import PhaseTimer, QueryPhase
from hopindex.methods.retrieval.answer import answer_request
from hopindex.methods.retrieval.rerank import rerank_scored
from hopindex.methods.retrieval.search import RETRIEVAL_STEP
from hopindex.methods.sirerag.prompts import paper_answer_request
from hopindex.methods.sirerag.propositions import METHOD
from hopindex.methods.sirerag.trees import PLANS, Tree, passages_beneath, plan_key

POOL_KINDS = (UnitKind.PASSAGE, UnitKind.PROPOSITION_AGGREGATE, UnitKind.SUMMARY)
# A similarity-only search over-fetches by this factor, then drops the relatedness
# tree's summaries (both trees' summaries share a kind the engines filter on).
_OVERFETCH = 3

E = TypeVar("E", bound=enum.StrEnum)


class Pool(enum.StrEnum):
    BOTH = "both"
    SIMILARITY = "similarity"


class AnswerPrompt(enum.StrEnum):
    PAPER = "paper"
    INDEXRAG = "indexrag"


ANSWER_REQUESTS = {AnswerPrompt.PAPER: paper_answer_request,
                   AnswerPrompt.INDEXRAG: answer_request}

OPTIONS_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "pool": {"type": "string", "enum": [p.value for p in Pool],
                 "description": "both trees (default) or the similarity tree alone "
                                "(RAPTOR's pool, for comparison)"},
        "answer_prompt": {"type": "string", "enum": [a.value for a in AnswerPrompt],
                          "description": "the paper's answer prompt (default) or "
                                         "IndexRAG's (as indexrag and ircot answer)"}},
}


def pool_of(options: QueryOptions) -> Pool:
    return _choice(options, "pool", Pool, Pool.BOTH)


def answer_prompt_of(options: QueryOptions) -> AnswerPrompt:
    return _choice(options, "answer_prompt", AnswerPrompt, AnswerPrompt.PAPER)


def _choice(options: QueryOptions, name: str, kind: type[E], default: E) -> E:
    raw = options.params.get(name, default.value)
    try:
        return kind(str(raw))
    except ValueError:
        raise InvalidInputError(f"{name} must be one of {', '.join(c.value for c in kind)}, "
                                f"got {raw!r}", where=f"options.{name}") from None


def in_pool(unit: Unit, pool: Pool) -> bool:
    if pool is Pool.BOTH:
        return unit.kind in POOL_KINDS
    return unit.kind is UnitKind.PASSAGE or (
        unit.kind is UnitKind.SUMMARY and unit.metadata.get("tree") == Tree.SIMILARITY.value)


class SiReRagMethod:
    name = METHOD

    def __init__(self, context: SearchContext) -> None:
        self._context = context

    def run_query(self, index: str, question: str, options: QueryOptions) -> QueryResult:
        started = time.perf_counter()
        context = self._context
        pool = pool_of(options)
        ask = ANSWER_REQUESTS[answer_prompt_of(options)]
        llm = context.require_llm(self.name)
        # At least ``k`` nodes: a caller asking for more passages than the paper's 20
        # nodes would otherwise get fewer than asked.
        top_k = max(context.method_settings(METHOD).top_k, options.k)
        timer = PhaseTimer()
        with timer.phase(QueryPhase.EMBED):
            # The question alone: the authors' code embeds it with the answer
            # instruction appended (the string its query engine gets), which would make
            # retrieval depend on the answer prompt chosen.
            vector = np.asarray(context.embedder.embed_query(question), dtype=np.float32)
        with timer.phase(QueryPhase.DENSE_SEARCH):
            nodes = self._search(index, vector, top_k, pool)
        # The nodes are the answer's contexts: the reranker reads them against the
        # question, and their order is the context's and the provenance's.
        nodes = rerank_scored(context, question, nodes, step=RETRIEVAL_STEP)
        usage = context.query_usage()
        degraded: list[Degradation] = []
        with timer.phase(QueryPhase.EXPAND):
            passages = self._provenance(index, vector, nodes, options.k)
        with timer.phase(QueryPhase.ANSWER):
            reply = answer_step(context, degraded, llm, ask(
                question, [u.text for u, _ in nodes]), usage, passages=passages)
        result = QueryResult(
            question=question, method=self.name, index=index, passages=passages,
            answer=reply.content.strip() if reply is not None else None,
            trace={"pool": pool.value, "answer_prompt": answer_prompt_of(options).value,
                   "pool_size": self._pool_size(index, pool),
                   "nodes": [{"unit_id": u.unit_id, "kind": u.kind.value,
                              "tree": u.metadata.get("tree"), "level": u.level,
                              "score": round(score, 4)} for u, score in nodes]},
            degraded=degraded, answer_truncated=reply is not None and reply.truncated)
        result.usage.add_llm(usage.total())
        result.usage.phases_s = timer.phases_s
        result.latency_s = time.perf_counter() - started
        return result

    def _search(self, index: str, vector: np.ndarray, top_k: int, pool: Pool
                ) -> list[tuple[Unit, float]]:
        """The pool's top ``top_k`` nodes with their cosine, best first."""
        kinds = POOL_KINDS if pool is Pool.BOTH else (UnitKind.PASSAGE, UnitKind.SUMMARY)
        limit = top_k if pool is Pool.BOTH else top_k * _OVERFETCH
        while True:
            hits = self._context.vectors.search_vectors(index, vector, limit,
                                                        UnitFilter(kinds=kinds))
            units = {u.unit_id: u for u in self._context.units.get_units(
                index, [h.unit_id for h in hits])}
            found = [(units[h.unit_id], h.score) for h in hits
                     if h.unit_id in units and in_pool(units[h.unit_id], pool)]
            # Too many of the other tree's summaries ranked high: look further.
            if len(found) >= top_k or len(hits) < limit:
                return found[:top_k]
            limit *= 2

    def _provenance(self, index: str, vector: np.ndarray, nodes: Sequence[tuple[Unit, float]],
                    k: int) -> list[RankedPassage]:
        """The first ``k`` documents beneath the ranked nodes, each with its passage."""
        ranked: list[RankedPassage] = []
        seen: set[str] = set()
        for node, score in nodes:
            if len(ranked) >= k:
                break
            for passage in self._passages_in_order(index, vector, node):
                for doc_id in passage.source_doc_ids:
                    if doc_id in seen or len(ranked) >= k:
                        continue
                    seen.add(doc_id)
                    ranked.append(RankedPassage(
                        rank=len(ranked) + 1, doc_id=doc_id,
                        title=str(passage.metadata.get("title", "")), text=passage.text,
                        score=score, via_unit_id=node.unit_id, via_kind=node.kind.value,
                        via_text="" if node.unit_id == passage.unit_id else node.text,
                        citation=passage_citation(passage.metadata)))
        return ranked

    def _passages_in_order(self, index: str, vector: np.ndarray, node: Unit) -> list[Unit]:
        """The passages a node stands for, nearest the question first (a deleted
        document's passages, still named by a stale tree, are gone)."""
        if node.kind is UnitKind.PASSAGE:
            return [node]
        ids = passages_beneath(node)
        units = {u.unit_id: u for u in self._context.units.get_units(index, ids)}
        scores = {r.unit_id: float(np.dot(np.asarray(r.vector, dtype=np.float32), vector))
                  for r in self._context.vectors.get_vectors(index, list(units))}
        order = {p: n for n, p in enumerate(ids)}
        return sorted(units.values(), key=lambda u: (-scores.get(u.unit_id, -2.0),
                                                     order[u.unit_id]))

    def _pool_size(self, index: str, pool: Pool) -> int:
        """Nodes in the pool: the kinds' unit counts, less the relatedness tree's
        summaries (from its plans) for the similarity pool."""
        counts = self._context.units.count_units(index)
        size = sum(counts.get(kind, 0) for kind in POOL_KINDS)
        if pool is Pool.BOTH:
            return size
        size -= counts.get(UnitKind.PROPOSITION_AGGREGATE, 0)
        records = self._context.records
        if records is not None:
            levels = self._context.method_settings(METHOD).levels
            plans = records.get_records(index, PLANS, [plan_key(Tree.RELATEDNESS, level)
                                                       for level in range(levels)])
            size -= sum(len(p.get("clusters", {})) for p in plans.values())
        return max(size, 0)

