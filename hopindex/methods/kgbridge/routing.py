"""Routing of a ``kgbridge`` query, with no LLM: which documents the plan chooses from.

Two rankings of documents are fused by reciprocal rank fusion (k = 60):

- **entity manifest**: the question's word spans, normalised as entity keys, are
  looked up among the index's ``entity_summary`` units (their payload carries the
  entity key, so the engine's filter finds them, with no scan of the graphs; the
  search context offers no entity catalogue); a document is ranked by the question
  entities it holds, a core entity of its manifest counting twice, ties by the
  best-ranked of its matched units;
- **document summaries**: dense search over the ``doc_summary`` units.

The top ``route_top_k`` documents are routed. An index with neither (no entity named
in the question, an index built by another method) is routed by dense search over
its passages, each document at its best passage's rank.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hopindex.backends.protocols import UnitFilter, Vector
from hopindex.core.models import Unit, UnitKind
from hopindex.methods.base import SearchContext
from hopindex.methods.kgbridge.graphs import GRAPHS
from hopindex.methods.kgbridge.parsing import entity_key
from hopindex.methods.phases import PhaseTimer, QueryPhase
from hopindex.methods.retrieval.fusion import RRF_K

# Departure from the paper (docs/methods.md, kgbridge): "the degree of entity matching" is
# not defined; here, the question's word spans found as entity keys, a core entity of
# the manifest counting twice. An index with neither ranking is routed by passages.
CORE_WEIGHT = 2
OTHER_WEIGHT = 1
MAX_NAME_WORDS = 8  # the longest word span of the question tried as an entity name
MAX_KEYS = 256
ENTITY_HITS = 200  # entity units fetched for the manifest match
FETCH_FACTOR = 3  # summaries or passages fetched per routed document
_EDGE = "\"'“”‘’()[]{}<>,.;:!?"  # noqa: RUF001  # typographic quotes are edges too
# Spans starting or ending with one of these are not names ("of Paris", "Paris in").
_FUNCTION_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from",
    "had", "has", "have", "he", "her", "his", "how", "in", "is", "it", "its", "of", "on",
    "or", "she", "than", "that", "the", "their", "they", "this", "to", "was", "were",
    "what", "when", "where", "which", "who", "whom", "whose", "why", "with"})


class RouteSource(enum.StrEnum):
    """Which rankings routed the documents."""

    FUSED = "entities+summaries"
    ENTITIES = "entities"
    SUMMARIES = "summaries"
    PASSAGES = "passages"  # neither ranking found a document
    NONE = "none"  # the index has nothing to search


@dataclass(frozen=True, slots=True)
class RoutedDoc:
    doc_id: str
    rrf: float
    manifest_rank: int | None  # 1-based; None: not in that ranking
    summary_rank: int | None
    passage_rank: int | None
    matched: tuple[str, ...]  # question entity keys it holds
    unit: Unit  # what led to it: its summary, else a matched entity, else a passage

    def as_trace(self, title: str) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "title": title, "manifest_rank": self.manifest_rank,
                "summary_rank": self.summary_rank, "passage_rank": self.passage_rank,
                "rrf": round(self.rrf, 6), "entities": list(self.matched)}


@dataclass(slots=True)
class Route:
    docs: list[RoutedDoc]
    source: RouteSource
    entities: list[str]  # question entity keys found in the index
    graphs: dict[str, dict[str, Any]] = field(default_factory=dict)  # read on the way


def question_keys(question: str) -> list[str]:
    """Every word span of the question that could name an entity, as entity keys:
    edge punctuation and a trailing possessive dropped, spans starting or ending with a
    function word left out (but "the" may lead: "The Beatles")."""
    tokens = question.split()
    keys: set[str] = set()
    for start in range(len(tokens)):
        for end in range(start + 1, min(start + MAX_NAME_WORDS, len(tokens)) + 1):
            span = tokens[start:end]
            for text in {" ".join(span).strip(_EDGE),
                         " ".join(t.strip(_EDGE) for t in span)}:
                for variant in (text, _without_possessive(text)):
                    key = entity_key(variant)
                    if _may_name(key):
                        keys.add(key)
    # Shorter spans first: a long question's cap drops its longest spans.
    return sorted(keys, key=lambda k: (len(k.split()), k))[:MAX_KEYS]


def _without_possessive(text: str) -> str:
    for suffix in ("'s", "’s", "'", "’"):  # noqa: RUF001
        if text.endswith(suffix) and len(text) > len(suffix) + 1:
            return text[:-len(suffix)]
    return text


def _may_name(key: str) -> bool:
    words = key.split()
    if not words or len(key) < 2:
        return False
    if all(w in _FUNCTION_WORDS for w in words):
        return False
    leading_ok = words[0] not in _FUNCTION_WORDS or (words[0] == "the" and len(words) > 1)
    return leading_ok and words[-1] not in _FUNCTION_WORDS


def rank_by_manifest(entity_units: Sequence[Unit], keys: set[str],
                     core: Mapping[str, set[str]]) -> list[tuple[str, int, tuple[str, ...]]]:
    """(doc id, weight, matched keys), best first: a matched key weighs ``CORE_WEIGHT``
    when it is a core entity of the document's manifest; ties by the first matched
    unit's rank."""
    matched: dict[str, list[str]] = {}
    for unit in entity_units:
        for doc_id in unit.source_doc_ids:
            found = matched.setdefault(doc_id, [])
            found.extend(k for k in unit.entities if k in keys and k not in found)
    weights = {d: sum(CORE_WEIGHT if k in core.get(d, set()) else OTHER_WEIGHT for k in found)
               for d, found in matched.items()}
    order = {d: n for n, d in enumerate(matched)}
    ranked = sorted((d for d in matched if weights[d] > 0),
                    key=lambda d: (-weights[d], order[d]))
    return [(d, weights[d], tuple(matched[d])) for d in ranked]


def fuse(rankings: Sequence[Sequence[str]]) -> dict[str, float]:
    """Reciprocal rank fusion of document rankings, 1-based ranks, k = 60."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (RRF_K + rank)
    return scores


class Router:
    """Routes one question over one index; what it reads stays on the route."""

    def __init__(self, context: SearchContext, index: str, timer: PhaseTimer) -> None:
        self._context = context
        self._index = index
        self._timer = timer

    def route(self, question: str, vector: Vector, top_k: int) -> Route:
        graphs: dict[str, dict[str, Any]] = {}
        keys = question_keys(question)
        entity_units = self._search(vector, ENTITY_HITS, UnitFilter(
            kinds=(UnitKind.ENTITY_SUMMARY,), entities=tuple(keys))) if keys else []
        # A popular name must not read hundreds of graphs per query: the core weights
        # re-rank only the documents leading by plain count (a core entity at most
        # doubles a document's weight).
        shortlist = [d for d, _, _ in rank_by_manifest(entity_units, set(keys), {})
                     ][:top_k * FETCH_FACTOR]
        graphs.update(self.read_graphs(shortlist))
        core = {d: set(g.get("manifest", {}).get("core_entities", []))
                for d, g in graphs.items()}
        kept = set(shortlist)
        manifest = [m for m in rank_by_manifest(entity_units, set(keys), core) if m[0] in kept]
        summaries = self._search(vector, top_k * FETCH_FACTOR,
                                 UnitFilter(kinds=(UnitKind.DOC_SUMMARY,)))
        summary_docs = list(dict.fromkeys(d for u in summaries for d in u.source_doc_ids))
        manifest_ids = [d for d, _, _ in manifest]
        passage_docs: list[str] = []
        representative: dict[str, Unit] = {}
        for unit in summaries:
            for doc_id in unit.source_doc_ids:
                representative.setdefault(doc_id, unit)
        for unit in entity_units:
            for doc_id in unit.source_doc_ids:
                representative.setdefault(doc_id, unit)
        if manifest_ids and summary_docs:
            source = RouteSource.FUSED
        elif manifest_ids or summary_docs:
            source = RouteSource.ENTITIES if manifest_ids else RouteSource.SUMMARIES
        else:
            passages = self._search(vector, top_k * FETCH_FACTOR,
                                    UnitFilter(kinds=(UnitKind.PASSAGE,)))
            for unit in passages:
                for doc_id in unit.source_doc_ids:
                    representative.setdefault(doc_id, unit)
            passage_docs = list(dict.fromkeys(d for u in passages for d in u.source_doc_ids))
            source = RouteSource.PASSAGES if passage_docs else RouteSource.NONE
        with self._timer.phase(QueryPhase.FUSION):
            scores = fuse([manifest_ids, summary_docs, passage_docs])
            ranks = [{d: n for n, d in enumerate(r, start=1)}
                     for r in (manifest_ids, summary_docs, passage_docs)]
            matched = {d: found for d, _, found in manifest}
            order = sorted(scores, key=lambda d: (-scores[d], d))[:top_k]
        docs = [RoutedDoc(doc_id=d, rrf=scores[d], manifest_rank=ranks[0].get(d),
                          summary_rank=ranks[1].get(d), passage_rank=ranks[2].get(d),
                          matched=matched.get(d, ()), unit=representative[d]) for d in order]
        graphs.update(self.read_graphs([d for d in order if d not in graphs]))
        found_keys = sorted({k for _, _, found in manifest for k in found})
        return Route(docs=docs, source=source, entities=found_keys, graphs=graphs)

    def read_graphs(self, doc_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The documents' graph records; none in an index another method built."""
        records = self._context.records
        if records is None or not doc_ids:
            return {}
        with self._timer.phase(QueryPhase.LOAD_UNITS):
            return records.get_records(self._index, GRAPHS, list(doc_ids))

    def _search(self, vector: Vector, k: int, unit_filter: UnitFilter) -> list[Unit]:
        """The units of a dense search, best first (a unit deleted meanwhile is left out)."""
        with self._timer.phase(QueryPhase.DENSE_SEARCH):
            hits = self._context.vectors.search_vectors(self._index, vector, k, unit_filter)
        with self._timer.phase(QueryPhase.LOAD_UNITS):
            units = {u.unit_id: u for u in self._context.units.get_units(
                self._index, [h.unit_id for h in hits])}
        return [units[h.unit_id] for h in hits if h.unit_id in units]
