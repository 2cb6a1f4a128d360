"""``bridgerag``: the query pipeline (docs/methods.md, "BridgeRAG").

hop 1 (dense top-5, or hybrid/keyword when asked; the top unit is the bridge) →
SVO queries and two entities (2 calls, or 1 with ``extraction=merged``) → one
batched embedding and 5 ANN passes (3 SVO queries, top-10 each; 2 entities, top-5
each) → pool ≤ 20 by max cosine → one batched judge call (on the judge queue with
a broker) → PIT fusion → top-k. LLM calls per query: 3 (2 merged; one fewer in
condition A).

Choices the paper leaves open:

- Hop-1 passages enter the pool only when an SVO or entity search finds them; they
  are never excluded (the first-hop gold is part of what Recall@k counts) nor added
  on their own. ``bridge_position=first`` instead returns the bridge at rank 1.
- A candidate found only by entity search gets its SVO score as its max cosine to
  the SVO queries, from its stored vector (``VectorStore.get_vectors``).
- Ties: see ``pit``. An entity repeated (``e1 | e1``) is searched once.
- Fallbacks never fail the query; each is named in the result's ``degraded`` (and
  the decision record's): an SVO reply that cannot be used, or none within the
  query's LLM deadline → the question itself is the one SVO query; no entity in the
  reply → no entity search; a judge reply that cannot be used, a provider that fails
  or is past the deadline, or no judge worker within the timeout → the pool ranked by
  SVO similarity (condition A, ``ranked_by: "A"``).
- Over an IndexRAG index the units are AKUs and bridging facts, over an extractive
  one its passages; results always come back as passages, through provenance.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from hopindex.backends.llm.usage import UsageMeter
from hopindex.backends.protocols import UnitFilter, Vector
from hopindex.core.errors import ConfigError, HopindexError, LlmUnavailableError
from hopindex.core.models import Hit, LlmUsage, Unit, UnitKind
from hopindex.core.settings import Settings
from hopindex.methods.base import (
    DEFAULT_CANDIDATES,
    Degradation,
    QueryOptions,
    QueryResult,
    Retrieval,
    SearchContext,
)
from hopindex.methods.bridgerag.entities import ask_entities, entity_searches
from hopindex.methods.bridgerag.judge import (
    JudgeOutcome,
    JudgeRequest,
    JudgeSite,
    JudgeStatus,
    judge_in_process,
    run_judge,
)
from hopindex.methods.bridgerag.params import (
    BridgePosition,
    BridgeRagParams,
    BridgeRagSettings,
    Condition,
    DecisionRecords,
    Extraction,
)
from hopindex.methods.bridgerag.pit import fuse_pit, pit, rank_positions
from hopindex.methods.bridgerag.pool import Candidate, build_pool, max_cosines
from hopindex.methods.bridgerag.prompts import cut
from hopindex.methods.bridgerag.records import (
    DecisionRecord,
    PoolEntry,
    append_record,
    records_path,
)
from hopindex.methods.bridgerag.searches import search_hop2
from hopindex.methods.bridgerag.svo import ask_svo_and_entities, ask_svo_queries
from hopindex.methods.phases import PhaseTimer, QueryPhase
from hopindex.methods.retrieval.expansion import expand_to_passages
from hopindex.methods.retrieval.kinds import FACTS, PASSAGES, preferred_filter
from hopindex.methods.retrieval.search import retrieve_candidates

if TYPE_CHECKING:
    # Annotations only: the runner imports the openai SDK, which loading the method
    # (every CLI command loads the registry) must not pay for.
    from hopindex.backends.llm.runner import LlmRunner

METHOD = "bridgerag"
LABEL_CHARS = 80
_NO_ENTITIES = ("", "")
# Hop 1, which picks the bridge, is reranked against the question; the hop-2 pool is
# not: the bridge-conditioned judge ranks it, and a reader of the question alone would
# undo the conditioning that is the method's point.
HOP1_STEP = "hop1"
T = TypeVar("T")


def unit_filter_for(held: frozenset[UnitKind]) -> UnitFilter | None:
    """The units the pipeline ranks: AKUs and bridging facts, passages, or (an index of
    another kind) every unit."""
    return preferred_filter(held, (FACTS, PASSAGES))


@dataclass(slots=True)
class _Run:
    """One query: its inputs, and what the pipeline has gathered so far."""

    index: str
    question: str
    options: QueryOptions
    params: BridgeRagParams
    unit_filter: UnitFilter | None
    record: DecisionRecord
    # The query's meter: its one LLM deadline covers the judge too.
    usage: UsageMeter
    degraded: list[Degradation] = field(default_factory=list)
    judge_usage: LlmUsage = field(default_factory=LlmUsage)
    # The shared phase vocabulary: hop-1 and hop-2 searches both count as embed /
    # dense_search, the SVO and entity calls as rewrite, pool building and PIT as fusion.
    timer: PhaseTimer = field(default_factory=PhaseTimer)
    units: dict[str, Unit] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)


class BridgeRagMethod:
    name = METHOD

    def __init__(self, context: SearchContext) -> None:
        self._context = context
        self._settings = context.settings or Settings()
        self._own: BridgeRagSettings = context.method_settings(METHOD)

    def run_query(self, index: str, question: str, options: QueryOptions) -> QueryResult:
        params = BridgeRagParams.from_params(options.params)
        context = self._context
        llm = context.require_llm(self.name)
        retrieval = options.retrieval or Retrieval.DENSE
        run = _Run(index=index, question=question, options=options, params=params,
                   unit_filter=unit_filter_for(context.kinds_of(index)),
                   record=DecisionRecord(index=index, question=question,
                                         params=params.as_dict(), retrieval=retrieval.value),
                   usage=context.query_usage())
        result = QueryResult(question=question, method=self.name, index=index, passages=[])
        bridges = self._hop1(run, retrieval)
        if not bridges:  # an empty index: nothing to bridge from
            return self._finish(run, result)
        queries, entities = self._extract(run, llm, cut(bridges[0].text, params.passage_chars))

        hop2 = search_hop2(context, index, queries, entity_searches(entities),
                           svo_k=params.svo_k, entity_k=params.entity_k,
                           unit_filter=run.unit_filter)
        run.timer.add_all(hop2.phases_s)
        run.record.vector_searches += hop2.searches
        with run.timer.phase(QueryPhase.FUSION):
            pool = build_pool(hop2.svo_lists, hop2.entity_lists, svo_keep=params.svo_keep,
                              pool_size=params.pool_size)
        with run.timer.phase(QueryPhase.LOAD_UNITS):
            wanted = [c.unit_id for c in pool if c.unit_id not in run.units]
            run.units.update((u.unit_id, u) for u in context.units.get_units(index, wanted))
            pool = [c for c in pool if c.unit_id in run.units]  # deleted since it was found
            svo_scores = self._svo_scores(run, pool, hop2.svo_vectors)

        outcome = self._judge(run, bridges, entities, pool)
        with run.timer.phase(QueryPhase.FUSION):
            hits = _rank(run, pool, svo_scores, outcome)
            if params.bridge_position is BridgePosition.FIRST:
                bridge_id = bridges[0].unit_id
                hits = [Hit(bridge_id, 1.0), *(h for h in hits if h.unit_id != bridge_id)]
        with run.timer.phase(QueryPhase.EXPAND):
            result.passages = expand_to_passages(index, hits, run.units, context.units,
                                                 options.k, documents=context.documents)
        return self._finish(run, result)

    def _hop1(self, run: _Run, retrieval: Retrieval) -> list[Unit]:
        """The bridge(s): the top ``bridges`` hop-1 hits; hop-1 units land in ``run.units``."""
        params = run.params
        # Dense needs only its top 5; a fusion ranks better from longer lists.
        candidates = (params.hop1_k if retrieval is Retrieval.DENSE
                      else max(params.hop1_k, run.options.candidates or DEFAULT_CANDIDATES))
        found = retrieve_candidates(self._context, run.index, run.question,
                                    replace(run.options, k=params.hop1_k,
                                            candidates=candidates, params={}),
                                    retrieval=retrieval, unit_filter=run.unit_filter,
                                    rerank_step=HOP1_STEP)
        run.timer.add_all(found.phases_s)
        run.record.vector_searches = 1 if "dense" in found.engines else 0
        run.units.update(found.units)
        top = found.hits[: params.bridges]
        bridges = [found.units[h.unit_id] for h in top]
        run.record.bridges = [{"unit_id": b.unit_id, "doc_ids": list(b.source_doc_ids),
                               "label": _label(b), "score": round(h.score, 6)}
                              for b, h in zip(bridges, top, strict=True)]
        return bridges

    @staticmethod
    def _extract(run: _Run, llm: LlmRunner,
                 bridge: str) -> tuple[tuple[str, ...], tuple[str, str]]:
        """The SVO queries and the two entities, with their fallbacks."""
        question, usage, degraded = run.question, run.usage, run.degraded
        if run.params.extraction is Extraction.MERGED:
            with run.timer.phase(QueryPhase.REWRITE):
                both = _attempt(lambda: ask_svo_and_entities(llm, question, bridge, usage),
                                "svo_entities",
                                "the question as the only SVO query, no entities", degraded)
            queries, entities = ((both.queries, both.entities) if both
                                 else ((question,), _NO_ENTITIES))
        else:
            with run.timer.phase(QueryPhase.REWRITE):
                queries = _attempt(lambda: ask_svo_queries(llm, question, bridge, usage),
                                   "svo_queries", "the question as the only SVO query",
                                   degraded) or (question,)
                entities = _attempt(lambda: ask_entities(llm, question, bridge, usage),
                                    "entities", "no entity search", degraded) or _NO_ENTITIES
        if not any(entities) and not any(d.step in ("entities", "svo_entities")
                                         for d in degraded):
            degraded.append(_fallback("entities", "the reply named no entity",
                                      "no entity search"))
        run.record.svo_queries, run.record.entities = list(queries), list(entities)
        return queries, entities

    def _svo_scores(self, run: _Run, pool: Sequence[Candidate],
                    svo_vectors: Vector) -> list[float]:
        """Each candidate's max cosine to the SVO queries: direct for entity-only ones,
        from their stored vectors (their text embedded now if the store lost one)."""
        missing = [c.unit_id for c in pool if c.svo_score is None]
        direct: dict[str, float] = {}
        if missing:
            stored = {r.unit_id: r.vector
                      for r in self._context.vectors.get_vectors(run.index, missing)}
            lost = [u for u in missing if u not in stored]
            if lost:
                embedded = self._context.embedder.embed_texts([run.units[u].text for u in lost])
                stored.update(zip(lost, embedded, strict=True))
            vectors = np.stack([np.asarray(stored[u], dtype=np.float32) for u in missing])
            direct = dict(zip(missing, max_cosines(svo_vectors, vectors), strict=True))
        return [c.svo_score if c.svo_score is not None else direct[c.unit_id] for c in pool]

    def _judge(self, run: _Run, bridges: Sequence[Unit], entities: tuple[str, str],
               pool: Sequence[Candidate]) -> JudgeOutcome:
        outcome, site = JudgeOutcome(JudgeStatus.SKIPPED), JudgeSite.NONE
        record, params = run.record, run.params
        if pool and params.condition is not Condition.A:
            conditioned = params.condition is Condition.C
            chars = params.passage_chars
            request = JudgeRequest(
                question=run.question,
                bridges=tuple(cut(b.text, chars) for b in bridges) if conditioned else (),
                entities=tuple(e for e in entities if e) if conditioned else (),
                candidates=tuple(cut(run.units[c.unit_id].text, chars) for c in pool))
            with run.timer.phase(QueryPhase.JUDGE):
                outcome, site = self._run_judge(run, request)
            run.judge_usage = outcome.usage  # counted where it ran, a worker included
            if not outcome.usable:
                run.degraded.append(_fallback("judge", f"{outcome.status.value}: "
                                                       f"{outcome.error}", "condition A"))
        record.judge = {"status": outcome.status.value, "site": site.value,
                        "error": outcome.error,
                        "unscored": sum(1 for s in outcome.scores if s is None)}
        return outcome

    def _run_judge(self, run: _Run, request: JudgeRequest) -> tuple[JudgeOutcome, JudgeSite]:
        """The judge within the query's LLM deadline: in this process on the query's
        meter, or on a worker for at most what is left of the deadline; not asked at all
        once an earlier LLM step of the query failed or no time is left."""
        deadline = run.usage.deadline
        if self._context.tasks is None:
            llm = self._context.require_llm(METHOD)
            return judge_in_process(llm, request, deadline), JudgeSite.IN_PROCESS
        timeout_s = self._own.judge_timeout_s
        if deadline is not None:
            try:
                deadline.check("judge")
            except LlmUnavailableError as exc:
                return JudgeOutcome(JudgeStatus.FAILED, error=str(exc)), JudgeSite.NONE
            timeout_s = min(timeout_s, deadline.remaining_s())
        return run_judge(self._context, request, timeout_s)

    def _finish(self, run: _Run, result: QueryResult) -> QueryResult:
        record = run.record
        result.degraded = run.degraded
        record.degraded = [d.as_dict() for d in run.degraded]
        result.usage.add_llm(run.usage.total())
        result.usage.add_llm(run.judge_usage)
        record.llm_calls = result.usage.llm_calls
        record.top = [{"rank": p.rank, "doc_id": p.doc_id, "title": p.title,
                       "unit_id": p.via_unit_id, "score": round(p.score, 6)}
                      for p in result.passages]
        mode = run.params.record or self._own.records
        if mode is DecisionRecords.JSONL:
            path = records_path(self._settings.data_dir, result.index)
            record.persisted_to = str(path)
            append_record(path, record)
        result.trace = record.as_dict()
        result.usage.phases_s = run.timer.phases_s
        result.latency_s = time.perf_counter() - run.started
        return result


def _rank(run: _Run, pool: Sequence[Candidate], svo_scores: list[float],
          outcome: JudgeOutcome) -> list[Hit]:
    """The pool best first: PIT-fused when the judge scored it, else by SVO similarity."""
    judged: Sequence[float | None] = outcome.scores if outcome.usable else [None] * len(pool)
    if outcome.usable:
        fused = fuse_pit(judged, svo_scores, run.params.alpha)
        run.record.ranked_by = run.params.condition.value
    else:
        fused = pit(svo_scores)
        run.record.ranked_by = Condition.A.value
    order = rank_positions(fused, svo_scores)
    rank_of = {position: rank for rank, position in enumerate(order, start=1)}
    run.record.pool = [
        PoolEntry(unit_id=c.unit_id, doc_ids=run.units[c.unit_id].source_doc_ids,
                  label=_label(run.units[c.unit_id]), found_by=tuple(s.value for s in c.found_by),
                  pool_score=c.pool_score, svo_score=svo_scores[i], judge_score=judged[i],
                  fused=fused[i], rank=rank_of[i])
        for i, c in enumerate(pool)]
    return [Hit(pool[i].unit_id, fused[i]) for i in order]


def _attempt(call: Callable[[], T], step: str, degraded_to: str,
             degraded: list[Degradation]) -> T | None:
    """The call's value, or None with the failure noted; a refused key still raises."""
    try:
        return call()
    except ConfigError:
        raise
    except HopindexError as exc:
        degraded.append(_fallback(step, f"{type(exc).__name__}: {exc}", degraded_to))
        return None


def _fallback(step: str, reason: str, to: str) -> Degradation:
    return Degradation(step=step, reason=f"{reason} (fell back to {to})")


def _label(unit: Unit) -> str:
    title = unit.metadata.get("title")
    return str(title) if title else cut(unit.text, LABEL_CHARS)

