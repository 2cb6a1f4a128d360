"""The working memory of a ``kgbridge`` query: what a plan reads, each unit once.

A plan is read the same way whether it is the first one or one of the reasoning
loop's (the paper's Extract_main and Extract_aux, Eq. 10, driven by the refined query
in the loop): each primary document's summary, its ``chunks_per_doc`` passages
nearest the query that planned it and, through SAME_AS links, the summary of the same
entity in another document for up to ``expansion`` of its linked entities; each
auxiliary document's named entities' summaries. Each round's new units are appended
(Eq. 12: C_t is C_(t-1) and ΔC_t); a unit already read is not read again.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hopindex.backends.protocols import UnitFilter, Vector
from hopindex.core.models import Unit, UnitKind
from hopindex.methods.base import Degradation, SearchContext
from hopindex.methods.kgbridge.graphs import LINKS
from hopindex.methods.kgbridge.parsing import entity_key
from hopindex.methods.kgbridge.query_parsing import Plan
from hopindex.methods.kgbridge.query_prompts import ContextLine
from hopindex.methods.kgbridge.routing import Route
from hopindex.methods.kgbridge.settings import KgBridgeSettings
from hopindex.methods.phases import PhaseTimer, QueryPhase

_WHAT = {UnitKind.DOC_SUMMARY: "summary", UnitKind.PASSAGE: "passage",
         UnitKind.ENTITY_SUMMARY: "entity"}
# The steps a degradation names.
CONTEXT_STEP, LINKS_STEP = "context", "links"


class Role(enum.StrEnum):
    """Why a unit is in the context; also the order passages are reported in."""

    CHUNK = "primary_chunk"
    SUMMARY = "primary_summary"
    LINKED = "linked"
    AUXILIARY = "auxiliary"


@dataclass(frozen=True, slots=True)
class ContextItem:
    unit: Unit
    role: Role
    round: int  # 0: the first plan; t: the plan of the loop's iteration t

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

    def as_trace(self) -> dict[str, Any]:
        return {"unit_id": self.unit.unit_id, "kind": self.unit.kind.value,
                "doc_id": self.doc_id, "role": self.role.value, "round": self.round}


def step_name(step: str, round_: int) -> str:
    """A degradation's step: the first plan's as is, a loop round's with its number."""
    return step if round_ == 0 else f"{step} (iteration {round_})"


class WorkingMemory:
    """The units read so far, in reading order, and the links followed to them."""

    def __init__(self, context: SearchContext, index: str, settings: KgBridgeSettings,
                 timer: PhaseTimer, degraded: list[Degradation]) -> None:
        self.context, self.index, self.settings = context, index, settings
        self.timer, self.degraded = timer, degraded
        self.items: list[ContextItem] = []
        self.seen: set[str] = set()
        self.links: list[dict[str, Any]] = []

    def lines(self) -> list[ContextLine]:
        return [item.line() for item in self.items]

    def read_plan(self, route: Route, plan: Plan, vector: Vector | None,
                  round_: int) -> list[str]:
        """Read what ``plan`` names, the primary documents' passages nearest ``vector``
        (the query that planned it); the ids of the units new to the memory."""
        before = len(self.items)
        graphs = route.graphs
        for doc_id in plan.primary:
            summary_id = graphs.get(doc_id, {}).get("manifest", {}).get("summary_unit_id")
            self._add(self.load([summary_id] if summary_id else []), Role.SUMMARY, round_)
            self._add(self._search(vector, self.settings.chunks_per_doc, UnitFilter(
                kinds=(UnitKind.PASSAGE,), source_doc_ids=(doc_id,))), Role.CHUNK, round_)
        self._follow_links(route, plan.primary, round_)
        representative = {d.doc_id: d.unit for d in route.docs}
        for pick in plan.auxiliary:
            entities = {str(e["key"]): e for e in graphs.get(pick.doc_id, {}).get("entities", [])}
            wanted = []
            for name in pick.entities:
                entity = entities.get(entity_key(name))
                if entity is None:
                    self.degraded.append(Degradation(
                        step_name(CONTEXT_STEP, round_),
                        f"auxiliary document {pick.doc_id!r} has no entity named {name!r}"))
                else:
                    wanted.append(str(entity["unit_id"]))
            found = self.load(wanted)
            if not found:
                # Nothing of it could be read by name: its summary stands in for it.
                summary_id = graphs.get(pick.doc_id, {}).get("manifest", {}).get(
                    "summary_unit_id")
                found = self.load([summary_id]) if summary_id else []
                if not found:
                    found = [representative[pick.doc_id]]
            self._add(found, Role.AUXILIARY, round_)
        return [item.unit.unit_id for item in self.items[before:]]

    def _follow_links(self, route: Route, primary: Sequence[str], round_: int) -> None:
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
                # Departure from the paper (docs/methods.md, kgbridge): which link of an
                # entity is expanded is not said; one leaving the primary documents
                # brings what they lack, then the surest.
                link, other = min(ends, key=lambda e: (e[1]["doc_id"] in primary,
                                                       -float(e[0]["s_link"]),
                                                       str(e[0]["link_id"])))
                count += 1
                followed.append({"entity": key, "name": str(other["name"]),
                                 "from_doc": doc_id, "to_doc": str(other["doc_id"]),
                                 "s_link": float(link["s_link"]),
                                 "link_id": str(link["link_id"]),
                                 "unit_id": str(other["unit_id"]), "round": round_})
        units = {u.unit_id: u for u in self.load([f["unit_id"] for f in followed])}
        for step in followed:
            unit = units.get(step["unit_id"])
            if unit is None:
                self.degraded.append(Degradation(
                    step_name(LINKS_STEP, round_),
                    f"link {step['link_id']} ({step['entity']}) leads to a unit no longer "
                    "stored: not followed"))
                continue
            if self._add([unit], Role.LINKED, round_):
                self.links.append(step)

    def _add(self, units: Sequence[Unit], role: Role, round_: int) -> list[str]:
        added = []
        for unit in units:
            if unit.unit_id not in self.seen:
                self.seen.add(unit.unit_id)
                self.items.append(ContextItem(unit, role, round_))
                added.append(unit.unit_id)
        return added

    def load(self, unit_ids: Sequence[str]) -> list[Unit]:
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
        return self.load([h.unit_id for h in hits])
