"""Later hops by co-mention: the documents that share a named entity with the best
documents so far, searched again with the question alone.

The next hop of a chain names the previous hop's answer, which the question never
names. A document sharing an entity with a seed is a candidate; among those, the
question's own words and vector still say which one it asks for. Restricting the
search to that neighbourhood leaves out the look-alikes a search of the whole index
ranks first. Entities named by more than ``max_entity_docs`` documents (a country, a
language) join everything to everything, so they are not followed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from hopindex.backends.protocols import UnitFilter, Vector
from hopindex.core.models import UnitKind
from hopindex.core.text import word_tokens
from hopindex.methods.base import QueryOptions, Retrieval, SearchContext
from hopindex.methods.hops.graph import RankedDoc, hop1_documents
from hopindex.methods.retrieval.search import retrieve_candidates


@dataclass(slots=True)
class Neighbourhood:
    """One hop's search: its documents best first, and how they were reached."""

    docs: list[RankedDoc]
    seeds: list[str]
    entities: int  # entities followed
    size: int  # documents searched


def neighbour_documents(context: SearchContext, index: str, seeds: Sequence[str],
                        max_entity_docs: int, named: Sequence[str] = ()) -> tuple[list[str], int]:
    """The documents sharing a followed entity with one of ``seeds`` (not the seeds), in
    a fixed order, and how many entities were followed. ``named``: the question's words;
    an entity it names leads to more documents like the seeds, not to the next hop."""
    catalogue = context.catalogue
    if catalogue is None or not seeds:
        return [], 0
    words = " " + " ".join(named) + " "
    entities = sorted({m.entity for found in catalogue.mentions_of_documents(index, seeds)
                       .values() for m in found
                       if " " + " ".join(word_tokens(m.entity)) + " " not in words})
    seed_set = set(seeds)
    reached: set[str] = set()
    followed = 0
    for found in catalogue.mentions_of_entities(index, entities).values():
        docs = {m.doc_id for m in found}
        if len(docs) > max_entity_docs or not docs - seed_set:
            continue
        followed += 1
        reached |= docs - seed_set
    return sorted(reached), followed


def search_neighbourhood(context: SearchContext, index: str, question: str,  # noqa: PLR0917  # the search's inputs, then its settings
                         vector: Vector | None, seeds: Sequence[str],
                         options: QueryOptions, *, retrieval: Retrieval,
                         max_entity_docs: int) -> Neighbourhood:
    """The question searched again within the seeds' neighbourhood (its passages only)."""
    docs, followed = neighbour_documents(context, index, seeds, max_entity_docs,
                                         word_tokens(question))
    if not docs:
        return Neighbourhood([], list(seeds), followed, 0)
    found = retrieve_candidates(
        context, index, question, replace(options, params={}), retrieval=retrieval,
        unit_filter=UnitFilter(kinds=(UnitKind.PASSAGE,), source_doc_ids=tuple(docs)),
        vector=vector)
    return Neighbourhood(hop1_documents(found.hits, found.units), list(seeds), followed,
                         len(docs))
