"""The two steps ``hops`` adds to hop 1: documents the question names, and the walk
from seed documents through their bridge units to the documents beyond them.

Both read only what an ``extractive`` index already holds: passage titles, bridge
units (an entity shared by 2..tau documents, with the sentences that mention it),
their stored vectors, and the entity catalogue's title mentions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from hopindex.backends.protocols import (
    DocumentStore,
    EntityCatalogue,
    UnitStore,
    Vector,
    VectorStore,
)
from hopindex.core.models import Hit, MentionSource, Unit, UnitKind
from hopindex.core.text import keep_entity, title_entity, word_tokens
from hopindex.methods.retrieval.expansion import rank_documents


@dataclass(frozen=True, slots=True)
class RankedDoc:
    doc_id: str
    unit: Unit  # the unit that put the document in this list
    score: float


def hop1_documents(hits: Sequence[Hit], units: dict[str, Unit]) -> list[RankedDoc]:
    """Hop 1's documents, best first, in ``extractive``'s order."""
    return [RankedDoc(doc_id, unit, hit.score)
            for doc_id, hit, unit in rank_documents(hits, units)]


def named_documents(question: str, docs: Sequence[RankedDoc],
                    titles: Mapping[str, str]) -> list[RankedDoc]:
    """Hop-1 documents whose title (without its disambiguation) the question names.

    Where titles overlap in the question ("The Hairdresser" inside "The Blue Collar
    Worker and the Hairdresser"), only the longest keeps its span: the shorter one
    names a different thing.
    """
    words = word_tokens(question)
    found: list[tuple[int, int, int, RankedDoc]] = []
    for rank, doc in enumerate(docs):
        entity = title_entity(titles.get(doc.doc_id, ""))
        tokens = word_tokens(entity)
        if not tokens or not keep_entity(entity):
            continue
        start = _find(words, tokens)
        if start >= 0:
            found.append((start, start + len(tokens), rank, doc))
    taken: list[tuple[int, int]] = []
    named: list[tuple[int, RankedDoc]] = []
    for start, end, rank, doc in sorted(found, key=lambda f: (f[0] - f[1], f[2])):
        if any(start < e and s < end and (s, e) != (start, end) for s, e in taken):
            continue
        taken.append((start, end))
        named.append((rank, doc))
    return [doc for _, doc in sorted(named, key=lambda n: n[0])]


@dataclass(slots=True)
class Walk:
    """Documents reached from the seeds, best first, and how (for the trace)."""

    docs: list[RankedDoc] = field(default_factory=list)
    steps: list[dict[str, object]] = field(default_factory=list)


def walk_bridges(index: str, question_vector: Vector, seeds: Sequence[str], *,
                 units: UnitStore, vectors: VectorStore,
                 catalogue: EntityCatalogue | None, sibling_factor: float) -> Walk:
    """Seed documents → their bridge units, each scored by cosine with the question →
    the other documents each bridge was built from (its entity's own page in full,
    a document that only mentions it at ``sibling_factor``: the entity's own page is
    the likelier next hop)."""
    walk = Walk()
    if not seeds:
        return walk
    bridges = units.units_of_documents(index, seeds, kinds=(UnitKind.BRIDGE,))
    if not bridges:
        return walk
    stored = {r.unit_id: r.vector for r in vectors.get_vectors(index,
                                                               [b.unit_id for b in bridges])}
    owners = _title_owners(index, [_entity(b) for b in bridges], catalogue)
    query = np.asarray(question_vector, dtype=np.float32)
    query = query / (float(np.linalg.norm(query)) or 1.0)
    seed_set = set(seeds)
    best: dict[str, RankedDoc] = {}
    for bridge in bridges:
        vector = stored.get(bridge.unit_id)
        if vector is None:
            continue  # not embedded yet
        vec = np.asarray(vector, dtype=np.float32)
        similarity = float(vec @ query) / (float(np.linalg.norm(vec)) or 1.0)
        entity = _entity(bridge)
        reached = []
        for doc_id in bridge.source_doc_ids:
            if doc_id in seed_set:
                continue
            score = similarity * (1.0 if doc_id in owners.get(entity, ()) else sibling_factor)
            if score <= 0:
                continue
            reached.append(doc_id)
            if doc_id not in best or score > best[doc_id].score:
                best[doc_id] = RankedDoc(doc_id, bridge, score)
        if reached:
            walk.steps.append({"entity": entity, "bridge": bridge.unit_id,
                               "similarity": round(similarity, 4),
                               "from": [d for d in bridge.source_doc_ids if d in seed_set],
                               "to": reached})
    walk.docs = sorted(best.values(), key=lambda d: (-d.score, d.doc_id))
    walk.steps.sort(key=lambda s: -float(str(s["similarity"])))
    return walk


def document_titles(index: str, docs: Sequence[RankedDoc], units: Mapping[str, Unit],
                    documents: DocumentStore) -> dict[str, str]:
    """Titles of ``docs``: from their passage hits, else read from the document store
    (a document that only a bridge reached)."""
    titles: dict[str, str] = {}
    for unit in units.values():
        # ==, not is: units read back from storage may carry the plain string.
        if unit.kind == UnitKind.PASSAGE and unit.source_doc_ids:
            titles.setdefault(unit.source_doc_ids[0], str(unit.metadata.get("title", "")))
    missing = [d.doc_id for d in docs if d.doc_id not in titles]
    if missing:
        titles.update({d.doc_id: d.title for d in documents.get_documents(index, missing)})
    return titles


def fuse_documents(lists: Sequence[tuple[str, float, Sequence[RankedDoc]]], rrf_k: int,
                   ) -> list[tuple[RankedDoc, float, dict[str, int]]]:
    """Weighted reciprocal rank fusion of document lists: each document with its fused
    score and its rank in every list that holds it."""
    scores: dict[str, float] = {}
    first: dict[str, RankedDoc] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, weight, docs in lists:
        for rank, doc in enumerate(docs, start=1):
            scores[doc.doc_id] = scores.get(doc.doc_id, 0.0) + weight / (rrf_k + rank)
            first.setdefault(doc.doc_id, doc)
            ranks.setdefault(doc.doc_id, {})[name] = rank
    order = sorted(scores, key=lambda d: (-scores[d], d))
    return [(first[d], scores[d], ranks[d]) for d in order]


def _entity(bridge: Unit) -> str:
    return str(bridge.metadata.get("entity", bridge.source_key))


def _title_owners(index: str, entities: Sequence[str],
                  catalogue: EntityCatalogue | None) -> dict[str, set[str]]:
    if catalogue is None or not entities:
        return {}
    mentions = catalogue.mentions_of_entities(index, sorted(set(entities)))
    return {entity: {m.doc_id for m in found if m.source is MentionSource.TITLE}
            for entity, found in mentions.items()}


def _find(words: Sequence[str], tokens: Sequence[str]) -> int:
    n = len(tokens)
    for i in range(len(words) - n + 1):
        if words[i] == tokens[0] and list(words[i:i + n]) == list(tokens):
            return i
    return -1
