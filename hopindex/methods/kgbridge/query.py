"""Query side of ``kgbridge``: route, plan, read, reason, answer; at most five LLM calls.

1. Routing (no LLM, ``routing.py``): the documents holding the question's entities and
   those whose summary is nearest the question, fused by rank; the top
   ``route_top_k``.
2. Planning (one call): the model picks one or two primary documents and, from the
   others, auxiliary documents with the entities it needs of them
   (``query_parsing.resolve_plan`` holds it to the routed documents).
3. Context: each primary document's summary, its ``chunks_per_doc`` passages nearest
   the question, and, through SAME_AS links, the summary of the same entity in another
   document for up to ``expansion`` of its linked entities (each entity's best link,
   one leaving the primary documents first);
   each auxiliary document's named entities' summaries.
4. Reasoning (at most ``max_iterations`` calls): the model says whether the context
   suffices; when not, its sub-question's three nearest passages or entity summaries
   not yet read join the context.
5. Answer (one call): the shared short-answer prompt over the context and findings.

A failed LLM step (a reply that cannot be used, no reply within the query's deadline,
a refused request) degrades the step (the plan to the top two routed documents, the
loop to its end, the answer to None) and is named in ``degraded``; it never fails the
query. Passages come from the context through provenance: the primary
documents' passages first, then the documents reached by links, by the plan's
auxiliaries and by the loop, then the other routed documents, until ``k``.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hopindex.backends.protocols import UnitFilter, Vector
from hopindex.core.errors import LLM_CALL_FAILURES
from hopindex.core.models import Hit, Unit, UnitKind
from hopindex.methods.base import (
    Degradation,
    QueryOptions,
    QueryResult,
    RankedPassage,
    SearchContext,
)
from hopindex.methods.kgbridge.graphs import LINKS, METHOD
from hopindex.methods.kgbridge.parsing import entity_key
from hopindex.methods.kgbridge.query_parsing import (
    Plan,
    parse_plan,
    parse_sufficiency,
    resolve_plan,
)
from hopindex.methods.kgbridge.query_prompts import (
    ContextLine,
    DocBrief,
    answer_request,
    plan_request,
    sufficiency_request,
)
from hopindex.methods.kgbridge.routing import Route, Router, RouteSource
from hopindex.methods.kgbridge.settings import KgBridgeSettings
from hopindex.methods.llm_steps import ANSWER_STEP, llm_step, reasoning_step
from hopindex.methods.phases import PhaseTimer, QueryPhase
from hopindex.methods.retrieval.expansion import expand_to_passages

if TYPE_CHECKING:
    from hopindex.backends.llm.runner import LlmRunner

GATHER_PER_STEP = 3  # new units a sub-question adds to the context
_GATHERED_KINDS = UnitFilter(kinds=(UnitKind.PASSAGE, UnitKind.ENTITY_SUMMARY))
_WHAT = {UnitKind.DOC_SUMMARY: "summary", UnitKind.PASSAGE: "passage",
         UnitKind.ENTITY_SUMMARY: "entity"}
# The steps a degradation names.
ROUTE_STEP, PLAN_STEP, CONTEXT_STEP, LINKS_STEP = "route", "plan", "context", "links"


class Role(enum.StrEnum):
    """Why a unit is in the context; also the order passages are reported in."""

    CHUNK = "primary_chunk"
    SUMMARY = "primary_summary"
    LINKED = "linked"
    AUXILIARY = "auxiliary"
    GATHERED = "gathered"


class Stop(enum.StrEnum):
    """Why the reasoning loop ended."""

    SUFFICIENT = "sufficient"
    MAX_ITERATIONS = "max_iterations"
    NO_SUB_QUESTION = "no_sub_question"
    NOTHING_NEW = "nothing_new"  # the sub-question found no unit not read already
    INVALID_REPLY = "invalid_reply"
    DISABLED = "disabled"  # HOPINDEX_KGBRIDGE_MAX_ITERATIONS=0


@dataclass(frozen=True, slots=True)
class ContextItem:
    unit: Unit
    role: Role

    @property
    def doc_id(self) -> str:
        return self.unit.source_doc_ids[0] if self.unit.source_doc_ids else ""

    def line(self) -> ContextLine:
        text = self.unit.text
        title = str(self.unit.metadata.get("title", ""))
        if self.unit.kind is UnitKind.DOC_SUMMARY and title:
            text = f"{title}: {text}"
        return ContextLine(doc_id=self.doc_id, what=_WHAT.get(self.unit.kind, "unit"),
                           text=text)


class KgBridgeMethod:
    name = METHOD

    def __init__(self, context: SearchContext) -> None:
        self._context = context

    def run_query(self, index: str, question: str, options: QueryOptions) -> QueryResult:
        started = time.perf_counter()
        llm = self._context.require_llm(self.name)
        settings: KgBridgeSettings = self._context.method_settings(METHOD)
        run = _Run(self._context, index, question, settings, llm)
        route = run.route()
        plan = run.plan(route)
        run.read_plan(route, plan)
        run.reason()
        answer = run.answer()
        with run.timer.phase(QueryPhase.EXPAND):
            passages = run.passages(route, options.k)
        result = QueryResult(question=question, method=self.name, index=index,
                             passages=passages, answer=answer,
                             trace=run.trace(route, plan, answer), degraded=run.degraded,
                             answer_truncated=run.answer_truncated)
        result.usage.add_llm(run.usage.total())
        result.usage.phases_s = run.timer.phases_s
        result.latency_s = time.perf_counter() - started
        return result


class _Run:
    """One query's state: the context read so far and what the trace reports."""

    def __init__(self, context: SearchContext, index: str, question: str,
                 settings: KgBridgeSettings, llm: LlmRunner) -> None:
        self.context, self.index, self.question = context, index, question
        self.settings, self.llm = settings, llm
        self.timer = PhaseTimer()
        self.usage = context.query_usage()
        self.items: list[ContextItem] = []
        self.seen: set[str] = set()
        self.findings: list[str] = []
        self.links: list[dict[str, Any]] = []
        self.iterations: list[dict[str, Any]] = []
        self.degraded: list[Degradation] = []
        self.answer_truncated = False
        self.stopped = Stop.DISABLED
        self.titles: dict[str, str] = {}
        self.vector: Vector | None = None

    # --- 1. routing --------------------------------------------------------------

    def route(self) -> Route:
        with self.timer.phase(QueryPhase.EMBED):
            self.vector = self.context.embedder.embed_query(self.question)
        route = Router(self.context, self.index, self.timer).route(
            self.question, self.vector, self.settings.route_top_k)
        if route.source in (RouteSource.PASSAGES, RouteSource.NONE):
            self.degraded.append(Degradation(
                ROUTE_STEP, "no question entity and no document summary found in the "
                            f"index: routed by {route.source.value}"))
        with self.timer.phase(QueryPhase.LOAD_UNITS):
            self.titles = {d.doc_id: d.title for d in self.context.documents.get_documents(
                self.index, [r.doc_id for r in route.docs])}
        return route

    # --- 2. planning -------------------------------------------------------------

    def plan(self, route: Route) -> Plan:
        routed = [d.doc_id for d in route.docs]
        if not routed:
            plan = Plan(primary=(), auxiliary=(), reason="",
                        degraded=("no document was routed: no plan asked",))
            self._note_plan(plan)
            return plan
        briefs = [self._brief(route, d.doc_id, d.unit) for d in route.docs]
        with self.timer.phase(QueryPhase.JUDGE):
            try:
                reply = self.llm.complete_json(plan_request(self.question, briefs),
                                               parse_plan, self.usage)
                plan = resolve_plan(reply, routed)
            except LLM_CALL_FAILURES as exc:
                plan = resolve_plan(None, routed, failure=str(exc))
        self._note_plan(plan)
        return plan

    def _note_plan(self, plan: Plan) -> None:
        self.degraded.extend(Degradation(PLAN_STEP, note) for note in plan.degraded)

    def _brief(self, route: Route, doc_id: str, unit: Unit) -> DocBrief:
        graph = route.graphs.get(doc_id, {})
        manifest = graph.get("manifest", {})
        names = {str(e["key"]): str(e["name"]) for e in graph.get("entities", [])}
        summary = str(manifest.get("summary") or (
            unit.text if unit.kind is UnitKind.DOC_SUMMARY else ""))
        return DocBrief(doc_id=doc_id, title=self.titles.get(doc_id, ""), summary=summary,
                        core_entities=tuple(names.get(k, k)
                                            for k in manifest.get("core_entities", [])))

    # --- 3. the plan's context ---------------------------------------------------

    def read_plan(self, route: Route, plan: Plan) -> None:
        graphs = route.graphs
        for doc_id in plan.primary:
            summary_id = graphs.get(doc_id, {}).get("manifest", {}).get("summary_unit_id")
            self._add(self._load([summary_id] if summary_id else []), Role.SUMMARY)
            self._add(self._search(self.vector, self.settings.chunks_per_doc, UnitFilter(
                kinds=(UnitKind.PASSAGE,), source_doc_ids=(doc_id,))), Role.CHUNK)
        self._follow_links(route, plan.primary)
        representative = {d.doc_id: d.unit for d in route.docs}
        for pick in plan.auxiliary:
            entities = {str(e["key"]): e for e in graphs.get(pick.doc_id, {}).get("entities", [])}
            wanted = []
            for name in pick.entities:
                entity = entities.get(entity_key(name))
                if entity is None:
                    self.degraded.append(Degradation(
                        CONTEXT_STEP, f"auxiliary document {pick.doc_id!r} has no entity "
                                      f"named {name!r}"))
                else:
                    wanted.append(str(entity["unit_id"]))
            found = self._load(wanted)
            if not found:
                # Nothing of it could be read by name: its summary stands in for it.
                summary_id = graphs.get(pick.doc_id, {}).get("manifest", {}).get(
                    "summary_unit_id")
                found = self._load([summary_id]) if summary_id else []
                if not found:
                    found = [representative[pick.doc_id]]
            self._add(found, Role.AUXILIARY)

    def _follow_links(self, route: Route, primary: Sequence[str]) -> None:
        """Each primary document's linked entities, core ones first, each by its best
        link (one leading outside the primary documents, then the highest S_link), at
        most ``expansion`` per document."""
        records = self.context.records
        graphs = route.graphs
        keys = sorted({str(e["key"]) for d in primary for e in graphs.get(d, {}).get(
            "entities", [])})
        if records is None or not keys or self.settings.expansion == 0:
            return
        with self.timer.phase(QueryPhase.LOAD_UNITS):
            linked = records.get_records(self.index, LINKS, keys)
        followed: list[dict[str, Any]] = []
        for doc_id in primary:
            graph = graphs.get(doc_id, {})
            core = [str(k) for k in graph.get("manifest", {}).get("core_entities", [])]
            order = list(dict.fromkeys([*core, *(str(e["key"]) for e in graph.get(
                "entities", []))]))
            count = 0
            for key in order:
                if count == self.settings.expansion:
                    break
                ends = [(link, other) for link in linked.get(key, {}).get("links", [])
                        for mine, other in ((link["a"], link["b"]), (link["b"], link["a"]))
                        if mine["doc_id"] == doc_id]
                if not ends:
                    continue
                # A link leaving the primary documents brings what they lack.
                link, other = min(ends, key=lambda e: (e[1]["doc_id"] in primary,
                                                       -float(e[0]["s_link"]),
                                                       str(e[0]["link_id"])))
                count += 1
                followed.append({"entity": key, "name": str(other["name"]),
                                 "from_doc": doc_id, "to_doc": str(other["doc_id"]),
                                 "s_link": float(link["s_link"]),
                                 "link_id": str(link["link_id"]),
                                 "unit_id": str(other["unit_id"])})
        units = {u.unit_id: u for u in self._load([f["unit_id"] for f in followed])}
        for step in followed:
            unit = units.get(step["unit_id"])
            if unit is None:
                self.degraded.append(Degradation(
                    LINKS_STEP, f"link {step['link_id']} ({step['entity']}) leads to a unit "
                                "no longer stored: not followed"))
                continue
            self.links.append(step)
            self._add([unit], Role.LINKED)

    # --- 4. reasoning ------------------------------------------------------------

    def reason(self) -> None:
        for number in range(1, self.settings.max_iterations + 1):
            step: dict[str, Any] = {"iteration": number, "sufficient": False, "findings": "",
                                    "sub_question": "", "units_added": []}
            self.iterations.append(step)
            request = sufficiency_request(self.question, self.lines(), self.findings)
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
            step["units_added"] = self._gather(check.sub_question)
            if not step["units_added"]:
                self.stopped = Stop.NOTHING_NEW
                return
            self.stopped = Stop.MAX_ITERATIONS

    def _gather(self, sub_question: str) -> list[str]:
        with self.timer.phase(QueryPhase.EMBED):
            vector = self.context.embedder.embed_query(sub_question)
        found = self._search(vector, GATHER_PER_STEP + len(self.seen), _GATHERED_KINDS)
        return self._add([u for u in found if u.unit_id not in self.seen][:GATHER_PER_STEP],
                         Role.GATHERED)

    # --- 5. answer and passages --------------------------------------------------

    def answer(self) -> str | None:
        with self.timer.phase(QueryPhase.ANSWER):
            reply = llm_step(self.degraded, ANSWER_STEP, lambda: self.llm.complete(
                answer_request(self.question, self.lines(), self.findings), self.usage))
        if reply is None:
            return None
        self.answer_truncated = reply.truncated
        answer = reply.content.strip()
        if not answer:
            self.degraded.append(Degradation(ANSWER_STEP, "the answer call returned no text"))
        return answer or None

    def passages(self, route: Route, k: int) -> list[RankedPassage]:
        order = [item.unit for role in Role for item in self.items if item.role is role]
        order.extend(d.unit for d in route.docs)
        units: dict[str, Unit] = {}
        for unit in order:
            units.setdefault(unit.unit_id, unit)
        hits = [Hit(unit_id=unit_id, score=1.0 / position)
                for position, unit_id in enumerate(units, start=1)]
        return expand_to_passages(self.index, hits, units, self.context.units, k,
                                  documents=self.context.documents)

    def lines(self) -> list[ContextLine]:
        return [item.line() for item in self.items]

    def trace(self, route: Route, plan: Plan, answer: str | None) -> dict[str, Any]:
        return {
            "route": {"source": route.source.value, "entities": route.entities,
                      "docs": [d.as_trace(self.titles.get(d.doc_id, "")) for d in route.docs]},
            "plan": {"primary": list(plan.primary),
                     "auxiliary": [{"doc_id": a.doc_id, "entities": list(a.entities)}
                                   for a in plan.auxiliary],
                     "reason": plan.reason, "degraded": list(plan.degraded)},
            "links_followed": self.links,
            "context": [{"unit_id": i.unit.unit_id, "kind": i.unit.kind.value,
                         "doc_id": i.doc_id, "role": i.role.value} for i in self.items],
            "iterations": self.iterations, "stopped": self.stopped.value,
            "answer": answer}

    # --- helpers -----------------------------------------------------------------

    def _add(self, units: Sequence[Unit], role: Role) -> list[str]:
        added = []
        for unit in units:
            if unit.unit_id not in self.seen:
                self.seen.add(unit.unit_id)
                self.items.append(ContextItem(unit, role))
                added.append(unit.unit_id)
        return added

    def _load(self, unit_ids: Sequence[str]) -> list[Unit]:
        if not unit_ids:
            return []
        with self.timer.phase(QueryPhase.LOAD_UNITS):
            units = {u.unit_id: u for u in self.context.units.get_units(self.index,
                                                                         list(unit_ids))}
        return [units[u] for u in unit_ids if u in units]

    def _search(self, vector: Vector | None, k: int, unit_filter: UnitFilter) -> list[Unit]:
        if vector is None:
            return []
        with self.timer.phase(QueryPhase.DENSE_SEARCH):
            hits = self.context.vectors.search_vectors(self.index, vector, k, unit_filter)
        return self._load([h.unit_id for h in hits])
