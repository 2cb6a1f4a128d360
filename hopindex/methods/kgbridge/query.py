"""Query side of ``kgbridge``: route, plan, read, then reason in a loop that refines the
query and routes and plans again; at most 2 + 2·``max_iterations`` LLM calls.

1. Routing (no LLM, ``routing.py``): the documents holding the question's entities and
   those whose summary is nearest the question, fused by rank; the top
   ``route_top_k``.
2. Planning (one call): the model picks one or two primary documents and, from the
   others, auxiliary documents with the entities it needs of them
   (``query_parsing.resolve_plan`` holds it to the routed documents).
3. Reading (``reading.py``): the plan's documents into the working memory.
4. The loop (the paper's dynamic working memory, §3.3.3), at most ``max_iterations``
   times: the model says whether the context suffices (one call); when not, its
   findings and sub-question make the refined query Q(t) = findings ⊕ sub-question
   (Eq. 11), which is routed (as in 1) and planned (one call, as in 2) again, and the
   new plan's documents are read (as in 3) into the same memory.
5. Answer (one call): the shared short-answer prompt over the context and findings.

A failed LLM step (a reply that cannot be used, no reply within the query's deadline,
a refused request) degrades the step (the first plan to the top two routed documents,
the loop to its end, the answer to None) and is named in ``degraded``; it never fails
the query, and after it the query's policy sends no further call. Passages come from
the context through provenance: primary documents' passages first (every round's),
then the documents reached by links and as auxiliaries, then the other routed
documents, until ``k``.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hopindex.backends.protocols import Vector
from hopindex.core.errors import LLM_CALL_FAILURES
from hopindex.core.models import Hit, Unit, UnitKind
from hopindex.methods.base import (
    Degradation,
    QueryOptions,
    QueryResult,
    RankedPassage,
    SearchContext,
)
from hopindex.methods.kgbridge.graphs import METHOD
from hopindex.methods.kgbridge.query_parsing import (
    Plan,
    parse_plan,
    parse_sufficiency,
    resolve_plan,
)
from hopindex.methods.kgbridge.query_prompts import (
    DocBrief,
    answer_request,
    plan_request,
    refined_query,
    sufficiency_request,
)
from hopindex.methods.kgbridge.reading import Role, WorkingMemory, step_name
from hopindex.methods.kgbridge.routing import Route, Router, RouteSource
from hopindex.methods.kgbridge.settings import KgBridgeSettings
from hopindex.methods.llm_steps import ANSWER_STEP, answer_step, reasoning_step
from hopindex.methods.phases import PhaseTimer, QueryPhase
from hopindex.methods.retrieval.expansion import expand_to_passages

if TYPE_CHECKING:
    from hopindex.backends.llm.runner import LlmRunner

# The steps a degradation names (a loop round's carry its number: ``step_name``).
ROUTE_STEP, PLAN_STEP = "route", "plan"


class Stop(enum.StrEnum):
    """Why the reasoning loop ended."""

    SUFFICIENT = "sufficient"
    MAX_ITERATIONS = "max_iterations"
    NO_SUB_QUESTION = "no_sub_question"
    NOTHING_NEW = "nothing_new"  # the refined query's plan read no unit not read already
    INVALID_REPLY = "invalid_reply"  # the sufficiency call failed
    PLAN_FAILED = "plan_failed"  # the refined query's plan call failed
    DISABLED = "disabled"  # HOPINDEX_KGBRIDGE_MAX_ITERATIONS=0


@dataclass(slots=True)
class Round:
    """One routing and plan: the first (0) or an iteration's (its number)."""

    number: int
    query: str
    vector: Vector
    route: Route
    plan: Plan | None = None  # None: its plan call failed, nothing was read
    added: list[str] = field(default_factory=list)


class KgBridgeMethod:
    name = METHOD

    def __init__(self, context: SearchContext) -> None:
        self._context = context

    def run_query(self, index: str, question: str, options: QueryOptions) -> QueryResult:
        started = time.perf_counter()
        llm = self._context.require_llm(self.name)
        settings: KgBridgeSettings = self._context.method_settings(METHOD)
        run = _Run(self._context, index, question, settings, llm)
        first = run.plan_round(0, question)
        run.reason()
        with run.timer.phase(QueryPhase.EXPAND):
            passages = run.passages(options.k)
        answer = run.answer(passages)
        result = QueryResult(question=question, method=self.name, index=index,
                             passages=passages, answer=answer,
                             trace=run.trace(first, answer), degraded=run.degraded,
                             answer_truncated=run.answer_truncated)
        result.usage.add_llm(run.usage.total())
        result.usage.phases_s = run.timer.phases_s
        result.latency_s = time.perf_counter() - started
        return result


class _Run:
    """One query's state: the working memory and what the trace reports."""

    def __init__(self, context: SearchContext, index: str, question: str,
                 settings: KgBridgeSettings, llm: LlmRunner) -> None:
        self.context, self.index, self.question = context, index, question
        self.settings, self.llm = settings, llm
        self.timer = PhaseTimer()
        self.usage = context.query_usage()
        self.degraded: list[Degradation] = []
        self.memory = WorkingMemory(context, index, settings, self.timer, self.degraded)
        self.findings: list[str] = []
        self.rounds: list[Round] = []
        self.iterations: list[dict[str, Any]] = []
        self.answer_truncated = False
        self.stopped = Stop.DISABLED
        self.titles: dict[str, str] = {}

    # --- routing, planning and reading: the first round and each refined one ----

    def plan_round(self, number: int, query: str) -> Round:
        """Route ``query``, plan over the routed documents and read the plan. The first
        plan's failure falls back to the top two routed documents; a loop round's ends
        the loop (``plan`` None), since the query's policy sends no call after it."""
        with self.timer.phase(QueryPhase.EMBED):
            vector = self.context.embedder.embed_query(query)
        route = Router(self.context, self.index, self.timer).route(
            query, vector, self.settings.route_top_k)
        if route.source in (RouteSource.PASSAGES, RouteSource.NONE):
            self.degraded.append(Degradation(
                step_name(ROUTE_STEP, number), "no query entity and no document summary "
                f"found in the index: routed by {route.source.value}"))
        with self.timer.phase(QueryPhase.LOAD_UNITS):
            self.titles.update({d.doc_id: d.title for d in self.context.documents.get_documents(
                self.index, [r.doc_id for r in route.docs if r.doc_id not in self.titles])})
        step = Round(number=number, query=query, vector=vector, route=route)
        self.rounds.append(step)
        step.plan = self._plan(step)
        if step.plan is not None:
            step.added = self.memory.read_plan(route, step.plan, vector, number)
        return step

    def _plan(self, step: Round) -> Plan | None:
        routed = [d.doc_id for d in step.route.docs]
        if not routed:
            plan = Plan(primary=(), auxiliary=(), reason="",
                        degraded=("no document was routed: no plan asked",))
            self._note_plan(step.number, plan)
            return plan
        briefs = [self._brief(step.route, d.doc_id, d.unit) for d in step.route.docs]
        with self.timer.phase(QueryPhase.JUDGE):
            try:
                reply = self.llm.complete_json(plan_request(step.query, briefs),
                                               parse_plan, self.usage)
                plan = resolve_plan(reply, routed)
            # Departure from the paper (docs/methods.md, kgbridge): a failed LLM step
            # degrades instead of failing the query: the first plan falls back to the top
            # two routed documents, a refined one ends the loop (no call follows it).
            except LLM_CALL_FAILURES as exc:
                if step.number > 0:
                    self.degraded.append(Degradation(
                        step_name(PLAN_STEP, step.number),
                        f"plan of the refined query unusable ({exc}): loop stopped"))
                    return None
                plan = resolve_plan(None, routed, failure=str(exc))
        self._note_plan(step.number, plan)
        return plan

    def _note_plan(self, number: int, plan: Plan) -> None:
        self.degraded.extend(Degradation(step_name(PLAN_STEP, number), note)
                             for note in plan.degraded)

    def _brief(self, route: Route, doc_id: str, unit: Unit) -> DocBrief:
        graph = route.graphs.get(doc_id, {})
        manifest = graph.get("manifest", {})
        names = {str(e["key"]): str(e["name"]) for e in graph.get("entities", [])}
        summary = str(manifest.get("summary") or (
            unit.text if unit.kind is UnitKind.DOC_SUMMARY else ""))
        return DocBrief(doc_id=doc_id, title=self.titles.get(doc_id, ""), summary=summary,
                        core_entities=tuple(names.get(k, k)
                                            for k in manifest.get("core_entities", [])))

    # --- the loop ----------------------------------------------------------------

    def reason(self) -> None:
        for number in range(1, self.settings.max_iterations + 1):
            step: dict[str, Any] = {"iteration": number, "sufficient": False, "findings": "",
                                    "sub_question": "", "refined_query": "", "route": None,
                                    "plan": None, "units_added": []}
            self.iterations.append(step)
            request = sufficiency_request(self.question, self.memory.lines(), self.findings)
            with self.timer.phase(QueryPhase.REASON):
                try:
                    check = self.llm.complete_json(request, parse_sufficiency, self.usage)
                except LLM_CALL_FAILURES as exc:
                    self.degraded.append(Degradation(
                        reasoning_step(number),
                        f"sufficiency reply unusable ({exc}): loop stopped"))
                    self.stopped = Stop.INVALID_REPLY
                    return
            step.update(sufficient=check.sufficient, findings=check.findings,
                        sub_question=check.sub_question)
            if check.findings and check.findings not in self.findings:
                self.findings.append(check.findings)
            if check.sufficient:
                self.stopped = Stop.SUFFICIENT
                return
            if not check.sub_question:
                self.stopped = Stop.NO_SUB_QUESTION
                return
            query = refined_query(check.findings, check.sub_question)
            refined = self.plan_round(number, query)
            step.update(refined_query=query, route=self._route_trace(refined.route),
                        plan=None if refined.plan is None else _plan_trace(refined.plan),
                        units_added=refined.added)
            if refined.plan is None:
                self.stopped = Stop.PLAN_FAILED
                return
            if not refined.added:
                # Departure from the paper (docs/methods.md, kgbridge): the paper loops
                # until the context suffices or T_max; over an unchanged context the
                # check (temperature 0) would only repeat its verdict, at one call each.
                self.stopped = Stop.NOTHING_NEW
                return
            self.stopped = Stop.MAX_ITERATIONS

    # --- answer, passages and trace ----------------------------------------------

    def answer(self, passages: Sequence[RankedPassage]) -> str | None:
        with self.timer.phase(QueryPhase.ANSWER):
            reply = answer_step(self.context, self.degraded, self.llm, answer_request(
                self.question, self.memory.lines(), self.findings), self.usage, passages=passages)
        if reply is None:
            return None
        self.answer_truncated = reply.truncated
        answer = reply.content.strip()
        if not answer:
            self.degraded.append(Degradation(ANSWER_STEP, "the answer call returned no text"))
        return answer or None

    def passages(self, k: int) -> list[RankedPassage]:
        items = self.memory.items
        order = [item.unit for role in Role for item in items if item.role is role]
        order.extend(d.unit for step in self.rounds for d in step.route.docs)
        units: dict[str, Unit] = {}
        for unit in order:
            units.setdefault(unit.unit_id, unit)
        hits = [Hit(unit_id=unit_id, score=1.0 / position)
                for position, unit_id in enumerate(units, start=1)]
        return expand_to_passages(self.index, hits, units, self.context.units, k,
                                  documents=self.context.documents)

    def trace(self, first: Round, answer: str | None) -> dict[str, Any]:
        plan = first.plan
        assert plan is not None  # the first plan falls back, it is never None
        return {"route": self._route_trace(first.route), "plan": _plan_trace(plan),
                "links_followed": self.memory.links,
                "context": [item.as_trace() for item in self.memory.items],
                "iterations": self.iterations, "stopped": self.stopped.value,
                "answer": answer}

    def _route_trace(self, route: Route) -> dict[str, Any]:
        return {"source": route.source.value, "entities": route.entities,
                "docs": [d.as_trace(self.titles.get(d.doc_id, "")) for d in route.docs]}


def _plan_trace(plan: Plan) -> dict[str, Any]:
    return {"primary": list(plan.primary),
            "auxiliary": [{"doc_id": a.doc_id, "entities": list(a.entities)}
                          for a in plan.auxiliary],
            "reason": plan.reason, "degraded": list(plan.degraded)}
