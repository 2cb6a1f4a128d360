"""Dense, keyword and hybrid candidate retrieval, timed per phase (``QueryPhase``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hopindex.backends.protocols import UnitFilter, Vector
from hopindex.core.ids import content_key
from hopindex.core.models import Hit, Unit
from hopindex.methods.base import FusionMode, QueryOptions, Retrieval, SearchContext
from hopindex.methods.phases import PhaseTimer, QueryPhase
from hopindex.methods.retrieval.fusion import TieKey, fuse, order_hits
from hopindex.methods.retrieval.rerank import rerank_hits

# The step name of a method's one retrieval of the question, when it is reranked.
RETRIEVAL_STEP = "retrieval"


@dataclass(slots=True)
class Candidates:
    """Fused hits resolved to units, best first, with the time each phase took."""

    hits: list[Hit]
    units: dict[str, Unit]
    phases_s: dict[str, float]
    engines: dict[str, int]
    # The question's embedding, for methods that score stored vectors against it
    # (None when the retrieval was keyword only).
    vector: Vector | None = None


def retrieve_candidates(context: SearchContext, index: str, question: str,
                        options: QueryOptions, *, retrieval: Retrieval,
                        unit_filter: UnitFilter | None = None,
                        vector: Vector | None = None,
                        rerank_step: str | None = None) -> Candidates:
    """``vector``: the question's embedding when the caller has it already (a further,
    deeper search for the same question), so it is not embedded again. ``rerank_step``:
    the name under which the query's reranker (when it has one) reorders the fused
    candidates (``retrieval/rerank.py``); None: this retrieval is never reranked."""
    timer = PhaseTimer()
    lists: list[Sequence[Hit]] = []
    weights: list[float] = []
    engines: dict[str, int] = {}
    if retrieval in (Retrieval.DENSE, Retrieval.HYBRID):
        if vector is None:
            with timer.phase(QueryPhase.EMBED):
                vector = context.embedder.embed_query(question)
        with timer.phase(QueryPhase.DENSE_SEARCH):
            dense = context.vectors.search_vectors(index, vector, options.candidate_count,
                                                   unit_filter)
        lists.append(dense)
        weights.append(options.dense_weight)
        engines["dense"] = len(dense)
    if retrieval in (Retrieval.KEYWORD, Retrieval.HYBRID):
        with timer.phase(QueryPhase.KEYWORD_SEARCH):
            keyword = context.keywords.search_text(index, question, options.candidate_count,
                                                   unit_filter)
        lists.append(keyword)
        weights.append(options.keyword_weight)
        engines["keyword"] = len(keyword)
    with timer.phase(QueryPhase.LOAD_UNITS):
        found = list(dict.fromkeys(h.unit_id for hits in lists for h in hits))
        units = {u.unit_id: u for u in context.units.get_units(index, found)}
    with timer.phase(QueryPhase.FUSION):
        tie_key = _content_keys(units)
        # A hit whose unit vanished (deleted between search and load) is dropped, not
        # failed; equal scores are ordered by content, never by the id (which hashes the
        # index's name) or the engine's storage order.
        lists = [order_hits([h for h in hits if h.unit_id in units], tie_key)
                 for hits in lists]
        # Fusion reads ranks, never raw scores, so it ranks alike whichever engines
        # (embedded or server) made the lists: their score scales differ, rankings agree.
        mode = options.fusion if len(lists) > 1 else FusionMode.NONE
        hits = fuse(lists, mode, weights, tie_key=tie_key)
    if rerank_step is not None:
        # Timed by the stage itself: its passes are reported once, with the query.
        hits = rerank_hits(context, question, hits, units, step=rerank_step)
    return Candidates(hits=hits, units=units, phases_s=timer.phases_s, engines=engines,
                      vector=vector)


def _content_keys(units: dict[str, Unit]) -> TieKey:
    keys = {unit_id: content_key(unit.kind, unit.source_key, unit.text)
            for unit_id, unit in units.items()}
    return keys.__getitem__
