"""SiReRAG's proposition aggregates: an entity's propositions, the relatedness tree's leaves.

Propositions are grouped by lower-cased entity, in document order (documents by id,
then chunk and reply order), one per line. As in the authors' code, single
propositions are not indexed on their own: an aggregate is the unit. An entity with
one proposition that also appears under another entity is skipped, since that
other aggregate already holds it; when every entity of that proposition has it as
their only one, the first entity (by key) keeps it, so it is neither lost nor
indexed twice. A proposition naming no entity is in no aggregate.

Two departures from the authors' code (its notebooks build the aggregates): there, an
entity is skipped whenever its one proposition is listed under any other entity, so a
proposition every entity of which has it alone is lost; and aggregates of the same
text (two entities with the same propositions) are indexed once, where here each
entity keeps its own, as each is a group rebuilt on its own when its documents change.

Which entities skip depends on other entities' counts, which an entity's own
documents do not decide. An ingest rebuilds the aggregates of the entities its
documents name, so an entity whose single proposition another entity came to hold
(or stopped holding) through other documents keeps its earlier decision until one
of its own documents changes: until then a proposition may be indexed twice or,
after another document's change, be in no aggregate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hopindex.core.ids import unit_id
from hopindex.core.models import Unit, UnitKind
from hopindex.methods.plugin import GroupsResult, PhaseContext
from hopindex.methods.sirerag.propositions import (
    METHOD,
    PassagePropositions,
    entity_key,
    read_propositions,
)


@dataclass(frozen=True, slots=True)
class Entry:
    """One proposition under an entity: where it came from and every entity it names."""

    doc_id: str
    passage_id: str
    text: str
    entities: frozenset[str]


def entries_by_entity(context: PhaseContext, entities: Sequence[str]
                      ) -> dict[str, list[Entry]]:
    """Each entity's propositions across the index, in document order, each text once."""
    mentions = context.state.mentions_of_entities(context.index, list(entities))
    doc_ids = sorted({m.doc_id for found in mentions.values() for m in found})
    records = read_propositions(context, doc_ids)
    wanted = set(entities)
    found: dict[str, list[Entry]] = {e: [] for e in entities}
    seen: dict[str, set[str]] = {e: set() for e in entities}
    for doc_id in doc_ids:
        for passage in records.get(doc_id, []):
            for entry in _entries(doc_id, passage):
                for entity in entry.entities & wanted:
                    if entry.text not in seen[entity]:
                        seen[entity].add(entry.text)
                        found[entity].append(entry)
    return found


def _entries(doc_id: str, passage: PassagePropositions) -> list[Entry]:
    return [Entry(doc_id=doc_id, passage_id=passage.passage_id, text=p.text,
                  entities=frozenset(k for k in map(entity_key, p.entities) if k))
            for p in passage.propositions]


def kept(entity: str, entries: Sequence[Entry], counts: dict[str, int]) -> bool:
    """Whether ``entity``'s aggregate is indexed (the module docstring's rule);
    ``counts``: the proposition count of every other entity its single one names."""
    if not entries:
        return False
    if len(entries) > 1:
        return True
    others = entries[0].entities - {entity}
    if any(counts.get(other, 0) > 1 for other in others):
        return False
    return all(entity < other for other in others)


def build_aggregates(context: PhaseContext, entities: list[str]) -> GroupsResult:
    found = entries_by_entity(context, entities)
    singles = {e: found[e][0] for e in entities if len(found[e]) == 1}
    others = sorted({o for e, entry in singles.items() for o in entry.entities - {e}})
    counted = entries_by_entity(context, others) if others else {}
    counts = {e: len(found.get(e) or counted.get(e, [])) for e in set(others) | set(found)}
    result = GroupsResult()
    for entity in entities:
        entries = found[entity]
        if kept(entity, entries, counts):
            result.built[entity] = [aggregate_unit(context.index, entity, entries)]
    return result


def aggregate_unit(index: str, entity: str, entries: Sequence[Entry]) -> Unit:
    text = "\n".join(entry.text for entry in entries)
    key = f"aggregate:{entity}"
    return Unit(unit_id=unit_id(index, UnitKind.PROPOSITION_AGGREGATE, key, text), index=index,
                kind=UnitKind.PROPOSITION_AGGREGATE, text=text,
                source_doc_ids=tuple(dict.fromkeys(e.doc_id for e in entries)), method=METHOD,
                source_key=key, entities=(entity,),
                metadata={"entity": entity,
                          "passages": list(dict.fromkeys(e.passage_id for e in entries))})
