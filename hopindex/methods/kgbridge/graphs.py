"""The documents phase of ``kgbridge``: one knowledge graph per document.

Each chunk becomes a passage unit and is sent once to the model, which lists its
entities and the relations between them; with gleaning on (the default), one more
call per chunk shows the model what it listed and asks for what it missed, merged
into the chunk's graph. The chunks' graphs merge into the document's (one entity per
key, first type kept, descriptions joined). One call per
document then summarises every entity from its description and first-degree triples,
and one more summarises the document from those summaries. Each entity becomes an
``entity_summary`` unit and the document a ``doc_summary`` unit.

The graph is the method's record of the document (namespace ``kgbridge.graph``, key
the document id), with its content hash: a document whose record matches its text is
never sent again. Its entity keys are its mentions, and they are touched in the links
namespace so the links phase adjudicates the names of new and changed documents only.

A document whose graph has no entity is valid: its passages and a summary of its
opening, no entity unit, no mention.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hopindex.core.errors import HopindexError
from hopindex.core.ids import content_hash, unit_id
from hopindex.core.logging import get_logger
from hopindex.core.models import Document, EntityMention, ItemError, MentionSource, Unit, UnitKind
from hopindex.methods.chunking import chunk_document, passage_units
from hopindex.methods.kgbridge.parsing import (
    ChunkGraph,
    join_descriptions,
    parse_doc_summary,
    parse_extraction,
    parse_gleaning,
    parse_summaries,
)
from hopindex.methods.kgbridge.prompts import (
    EntityBrief,
    doc_summary_request,
    extract_request,
    glean_request,
    summaries_request,
)
from hopindex.methods.kgbridge.settings import KgBridgeSettings
from hopindex.methods.plugin import DocumentsResult, PhaseContext

log = get_logger(__name__)

METHOD = "kgbridge"
GRAPHS = "kgbridge.graph"  # the records' namespace: one graph per document id
LINKS = "kgbridge.links"  # the links phase's namespace: one key per entity key
# Departure from the paper (docs/methods.md, kgbridge): the manifest's core entities are
# not defined there; here, the ten most connected (by triples).
MAX_CORE_ENTITIES = 10


@dataclass(slots=True)
class EntityNode:
    key: str
    name: str
    type: str
    description: str
    chunks: list[int] = field(default_factory=list)


@dataclass(slots=True)
class DraftGraph:
    """A document's merged graph before its summaries."""

    entities: dict[str, EntityNode] = field(default_factory=dict)
    relations: list[dict[str, Any]] = field(default_factory=list)


def merge_chunks(graphs: Sequence[ChunkGraph]) -> DraftGraph:
    """The chunks' graphs, in chunk order, as one: an entity per key (first name and
    type kept, descriptions joined, the chunks it appears in); each triple once, with
    the first chunk stating it."""
    draft = DraftGraph()
    seen: set[tuple[str, str, str]] = set()
    for number, graph in enumerate(graphs):
        for entity in graph.entities:
            node = draft.entities.get(entity.key)
            if node is None:
                draft.entities[entity.key] = EntityNode(entity.key, entity.name, entity.type,
                                                        entity.description, [number])
                continue
            if entity.description and entity.description not in node.description:
                node.description = join_descriptions(node.description, entity.description)
            if number not in node.chunks:
                node.chunks.append(number)
        for relation in graph.relations:
            triple = (relation.source, relation.relation, relation.target)
            if triple not in seen:
                seen.add(triple)
                draft.relations.append({"source": relation.source,
                                        "relation": relation.relation,
                                        "target": relation.target, "chunk": number})
    return draft


def core_entities(keys: Sequence[str], relations: Sequence[Mapping[str, Any]]) -> list[str]:
    """Keys by degree (triples touching them), most connected first, ties in graph
    order; at most ``MAX_CORE_ENTITIES``."""
    degree = dict.fromkeys(keys, 0)
    for relation in relations:
        for end in {relation["source"], relation["target"]}:
            if end in degree:
                degree[end] += 1
    order = {key: n for n, key in enumerate(keys)}
    return sorted(keys, key=lambda k: (-degree[k], order[k]))[:MAX_CORE_ENTITIES]


def briefs(draft: DraftGraph) -> list[EntityBrief]:
    """Each entity with its description and first-degree triples, by name."""
    names = {key: node.name for key, node in draft.entities.items()}
    return [EntityBrief(name=node.name, type=node.type, description=node.description,
                        triples=tuple((names[r["source"]], r["relation"], names[r["target"]])
                                      for r in draft.relations if key in (r["source"],
                                                                          r["target"])))
            for key, node in draft.entities.items()]


def entity_text(entity: Mapping[str, Any]) -> str:
    return f"{entity['name']} ({entity['type']}): {entity['summary']}"


def entity_unit(index: str, doc_id: str, entity: Mapping[str, Any]) -> Unit:
    text, key = entity_text(entity), f"{doc_id}#entity:{entity['key']}"
    return Unit(unit_id=unit_id(index, UnitKind.ENTITY_SUMMARY, key, text), index=index,
                kind=UnitKind.ENTITY_SUMMARY, text=text, source_doc_ids=(doc_id,),
                method=METHOD, source_key=key, entities=(str(entity["key"]),),
                metadata={"name": entity["name"], "key": entity["key"],
                          "type": entity["type"], "doc_id": doc_id})


def doc_summary_unit(document: Document, summary: str) -> Unit:
    key = f"{document.doc_id}#summary"
    return Unit(unit_id=unit_id(document.index, UnitKind.DOC_SUMMARY, key, summary),
                index=document.index, kind=UnitKind.DOC_SUMMARY, text=summary,
                source_doc_ids=(document.doc_id,), method=METHOD, source_key=key,
                metadata={"title": document.title})


def summarised_entities(document: Document, draft: DraftGraph,
                        summaries: Mapping[str, str]) -> list[dict[str, Any]]:
    """The record's entities: an entity the reply left out is summarised by its
    description (by its name when it has none), and says so."""
    entities = []
    for key, node in draft.entities.items():
        summary = summaries.get(key)
        entity: dict[str, Any] = {
            "key": key, "name": node.name, "type": node.type, "description": node.description,
            "summary": summary or node.description or node.name,
            "summary_source": "llm" if summary else "description", "unit_id": "",
            "chunks": list(node.chunks)}
        entity["unit_id"] = entity_unit(document.index, document.doc_id, entity).unit_id
        entities.append(entity)
    return entities


def graph_record(document: Document, draft: DraftGraph, entities: list[dict[str, Any]],
                 summary: str, passages: Sequence[Unit]) -> dict[str, Any]:
    return {"content_hash": content_hash(document.title, document.text),
            "entities": entities, "relations": draft.relations,
            "manifest": {"core_entities": core_entities(list(draft.entities), draft.relations),
                         "summary": summary,
                         "summary_unit_id": doc_summary_unit(document, summary).unit_id},
            "passages": [u.unit_id for u in passages]}


def units_of(document: Document, record: Mapping[str, Any], passages: Sequence[Unit]
             ) -> list[Unit]:
    """The document's units, from its graph record: they need no model call."""
    return [*passages,
            *(entity_unit(document.index, document.doc_id, e) for e in record["entities"]),
            doc_summary_unit(document, str(record["manifest"]["summary"]))]


class _Batch:
    """One batch's documents on their way through the rounds of calls (extraction,
    gleaning when on, entity summaries, document summary); a document failing in one
    round leaves the later ones."""

    def __init__(self, context: PhaseContext, documents: Sequence[Document],
                 bodies: Mapping[str, Sequence[str]]) -> None:
        self.context = context
        self.documents = list(documents)
        self.bodies = bodies
        self.failures: dict[str, str] = {}
        self.drafts: dict[str, DraftGraph] = {}
        self.entities: dict[str, list[dict[str, Any]]] = {}
        self.summaries: dict[str, str] = {}

    def live(self) -> list[Document]:
        return [d for d in self.documents if d.doc_id not in self.failures]

    def extract(self) -> None:
        requests = [(d, n, extract_request(d.title, body)) for d in self.documents
                    for n, body in enumerate(self.bodies[d.doc_id])]
        outcomes = self._json([r for _, _, r in requests], parse_extraction)
        graphs: dict[str, list[ChunkGraph]] = {d.doc_id: [] for d in self.documents}
        for (document, number, _), outcome in zip(requests, outcomes, strict=True):
            if isinstance(outcome, HopindexError):
                self.failures.setdefault(document.doc_id,
                                         f"entity extraction failed at chunk {number}: {outcome}")
            else:
                graphs[document.doc_id].append(outcome)
        settings: KgBridgeSettings = self.context.settings
        if settings.gleaning:
            self.glean(graphs)
        for document in self.live():
            self.drafts[document.doc_id] = merge_chunks(graphs[document.doc_id])

    def glean(self, graphs: dict[str, list[ChunkGraph]]) -> None:
        """One more call per chunk of the documents still live: the entities it missed
        join the chunk's graph (merged by key like any other). A reply still invalid
        after the repair fails the document, as an extraction would: a graph kept
        without its gleaning would never be gleaned again, its text being unchanged."""
        asked = [(d, n, graph) for d in self.live()
                 for n, graph in enumerate(graphs[d.doc_id])]
        requests = [glean_request(d.title, self.bodies[d.doc_id][n],
                                  [e.name for e in graph.entities]) for d, n, graph in asked]
        parses = [functools.partial(parse_gleaning, listed=graph.entities)
                  for _, _, graph in asked]
        outcomes = self.context.require_llm().complete_json_many(
            requests, parses, self.context.usage) if requests else []
        for (document, number, graph), outcome in zip(asked, outcomes, strict=True):
            if isinstance(outcome, HopindexError):
                self.failures.setdefault(document.doc_id,
                                         f"gleaning failed at chunk {number}: {outcome}")
            else:
                graphs[document.doc_id][number] = ChunkGraph(
                    entities=graph.entities + outcome.entities,
                    relations=graph.relations + outcome.relations)

    def summarise_entities(self) -> None:
        asked = [d for d in self.live() if self.drafts[d.doc_id].entities]
        outcomes = self._json([summaries_request(d.title, briefs(self.drafts[d.doc_id]))
                               for d in asked], parse_summaries)
        replies: dict[str, Mapping[str, str]] = {}
        for document, outcome in zip(asked, outcomes, strict=True):
            if isinstance(outcome, HopindexError):
                self.failures[document.doc_id] = f"entity summaries failed: {outcome}"
            else:
                replies[document.doc_id] = outcome
        for document in self.live():
            self.entities[document.doc_id] = summarised_entities(
                document, self.drafts[document.doc_id], replies.get(document.doc_id, {}))

    def summarise_documents(self) -> None:
        asked = self.live()
        requests = []
        for document in asked:
            entities = self.entities[document.doc_id]
            order = core_entities([e["key"] for e in entities],
                                  self.drafts[document.doc_id].relations)
            rank = {key: n for n, key in enumerate(order)}
            ranked = sorted(entities, key=lambda e: rank.get(e["key"], len(rank)))
            bodies = self.bodies[document.doc_id]
            # Departure from the paper (docs/methods.md, kgbridge): S_d from every entity's summary,
            # most connected first, not from the core entities' alone (Eq. 8).
            requests.append(doc_summary_request(document.title,
                                                [entity_text(e) for e in ranked],
                                                bodies[0] if bodies else document.title))
        outcomes = (self.context.require_llm().complete_text_many(
            requests, parse_doc_summary, self.context.usage) if requests else [])
        for document, outcome in zip(asked, outcomes, strict=True):
            if isinstance(outcome, HopindexError):
                self.failures[document.doc_id] = f"document summary failed: {outcome}"
            else:
                self.summaries[document.doc_id] = outcome

    def _json(self, requests: list[Any], parse: Any) -> list[Any]:
        if not requests:
            return []
        return self.context.require_llm().complete_json_many(requests, parse,
                                                             self.context.usage)


def run_graphs(context: PhaseContext, documents: list[Document]) -> DocumentsResult:
    """Passages, graph and summaries of a batch: model calls only for the documents
    whose stored graph is not of their current text."""
    started = time.perf_counter()
    state, index = context.state, context.index
    stored = state.get_records(index, GRAPHS, [d.doc_id for d in documents])
    # Departure from the paper (docs/methods.md, kgbridge): hopindex's shared chunks (2,000
    # characters, 200 overlap) instead of 512 tokens with 64 overlap.
    bodies = {d.doc_id: chunk_document(d) for d in documents}
    pending = [d for d in documents if stored.get(d.doc_id, {}).get("content_hash")
               != content_hash(d.title, d.text)]
    batch = _Batch(context, pending, bodies)
    batch.extract()
    batch.summarise_entities()
    batch.summarise_documents()
    passages = {d.doc_id: passage_units(d, bodies[d.doc_id], METHOD) for d in documents}
    records = {d.doc_id: graph_record(d, batch.drafts[d.doc_id], batch.entities[d.doc_id],
                                      batch.summaries[d.doc_id], passages[d.doc_id])
               for d in batch.live()}
    if records:
        state.put_records(index, GRAPHS, records)
    result = DocumentsResult(errors=[
        ItemError(item=doc_id, stage=context.phase, reason=reason)
        for doc_id, reason in sorted(batch.failures.items())])
    graphs = {**stored, **records}
    for document in documents:
        if document.doc_id in batch.failures:
            continue
        record = graphs[document.doc_id]
        result.units.extend(units_of(document, record, passages[document.doc_id]))
        result.touch(LINKS, replace_mentions(context, document.doc_id,
                                             [e["key"] for e in record["entities"]]))
    log.info("kgbridge_graphs_built", index=index, documents=len(documents),
             extracted=len(records), failed=len(batch.failures),
             entities=sum(len(r["entities"]) for r in records.values()),
             relations=sum(len(r["relations"]) for r in records.values()),
             duration_s=round(time.perf_counter() - started, 3))
    return result


def replace_mentions(context: PhaseContext, doc_id: str, keys: Sequence[str]) -> set[str]:
    """Store the document's entity keys as its mentions; returns the names to
    adjudicate again: those it names now and those it named before and no longer."""
    mentions = [EntityMention(entity=key, doc_id=doc_id, source=MentionSource.LLM)
                for key in sorted(set(keys))]
    left = context.state.replace_mentions(context.index, doc_id, mentions,
                                          (MentionSource.LLM,))
    return left | set(keys)


def read_graphs(context: PhaseContext, doc_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    return context.state.get_records(context.index, GRAPHS, list(doc_ids))
