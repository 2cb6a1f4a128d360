"""Hops past the second, and the co-mention alternative to the bridge walk.

``bridges``: the walk goes on from the best document it reached (hop 3, then hop 4),
through that document's bridges, each scored against the question. Each further list
enters the fusion at ``deep_weight``, well below hop 1's: a document only the last hop
reached can pass hop 1's weaker candidates, not its best ones, so a 2-hop question's
answer is not pushed down by a third hop it never needed (the stopping rule).

``mentions``: from the seeds, the question searched again among the documents sharing
an entity the question does not name (``neighbours.py``), then from that search's best.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hopindex.methods.base import QueryOptions, Retrieval, SearchContext
from hopindex.methods.hops.graph import RankedDoc, walk_bridges
from hopindex.methods.hops.neighbours import search_neighbourhood
from hopindex.methods.hops.params import Chain, HopsParams
from hopindex.methods.retrieval.search import Candidates


@dataclass(frozen=True, slots=True)
class ChainStarts:
    """What the first two hops found: where a chain starts."""

    named: Sequence[RankedDoc]
    hop1: Sequence[RankedDoc]
    seeds: Sequence[str]  # the walk's seeds
    walked: Sequence[RankedDoc]  # the walk's documents, best first


@dataclass(slots=True)
class Chained:
    """Each later hop's list for the fusion (name, weight, documents), and its trace."""

    lists: list[tuple[str, float, list[RankedDoc]]] = field(default_factory=list)
    steps: list[dict[str, object]] = field(default_factory=list)


def follow_chain(context: SearchContext, index: str, question: str, found: Candidates, *,
                 params: HopsParams, options: QueryOptions, retrieval: Retrieval,
                 starts: ChainStarts) -> Chained:
    if params.chain is Chain.BRIDGES:
        return _bridges(context, index, found, params, starts)
    return _mentions(context, index, question, found, params=params, options=options,
                     retrieval=retrieval, starts=starts)


def _bridges(context: SearchContext, index: str, found: Candidates, params: HopsParams,
             starts: ChainStarts) -> Chained:
    chained = Chained()
    if found.vector is None:
        return chained
    visited = set(starts.seeds)
    frontier = list(starts.walked)
    for depth in range(3, params.chain_hops + 1):
        hop_seeds = [d.doc_id for d in frontier[: params.chain_seeds]]
        if not hop_seeds:
            break
        visited.update(hop_seeds)
        deeper = walk_bridges(index, found.vector, hop_seeds, units=context.units,
                              vectors=context.vectors, catalogue=context.catalogue,
                              sibling_factor=params.sibling_factor)
        frontier = [d for d in deeper.docs if d.doc_id not in visited]
        chained.lists.append((f"hop{depth}", params.deep_weight,
                              frontier[: params.walk_docs]))
        chained.steps.append({"hop": depth, "seeds": hop_seeds, "walk": deeper.steps[:10]})
    return chained


def _mentions(context: SearchContext, index: str, question: str, found: Candidates, *,
              params: HopsParams, options: QueryOptions, retrieval: Retrieval,
              starts: ChainStarts) -> Chained:
    chained = Chained()
    hop_seeds = list(dict.fromkeys([d.doc_id for d in starts.named]
                                   + [d.doc_id for d in starts.hop1[: params.chain_seeds]]))
    for depth in range(2, params.chain_hops + 1):
        hood = search_neighbourhood(context, index, question, found.vector, hop_seeds,
                                    options, retrieval=retrieval,
                                    max_entity_docs=params.max_entity_docs)
        weight = params.chain_weight if depth == 2 else params.deep_weight
        chained.lists.append((f"hop{depth}", weight, hood.docs))
        chained.steps.append({"hop": depth, "seeds": hood.seeds, "entities": hood.entities,
                              "documents": hood.size})
        hop_seeds = [d.doc_id for d in hood.docs[: params.chain_seeds]]
        if not hop_seeds:
            break
    return chained
