"""The phases a query's latency is broken down into, and a timer that adds them up.

Every method reports its time in these phases (``QueryUsage.phases_s``), so a
response and the per-phase latency histogram (``hopindex_query_phase_duration_seconds``)
speak one bounded vocabulary across methods. A phase run several times in one query
(IRCoT's retrieval steps) sums its runs.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from hopindex.backends.embedder.loading import loads_so_far
from hopindex.core.tracing import span

QUERY_PHASE = "hopindex.query.phase"


class QueryPhase(enum.StrEnum):
    EMBED = "embed"  # the question (or a step's query) into a vector
    DENSE_SEARCH = "dense_search"
    KEYWORD_SEARCH = "keyword_search"
    FUSION = "fusion"  # RRF / percentile-rank of the engines' lists
    RERANK = "rerank"  # the reranker reordering the fused candidates (retrieval/rerank.py)
    LOAD_UNITS = "load_units"  # hits resolved to units from the state store
    REWRITE = "rewrite"  # LLM calls that rewrite or decompose the question (sub-queries)
    REASON = "reason"  # LLM reasoning steps (IRCoT)
    JUDGE = "judge"  # an LLM judging candidates (bridge judge)
    ANSWER = "answer"  # the answer LLM call
    EXTRACT = "extract"  # local models (or rules) rewriting sub-questions, extracting spans
    EXPAND = "expand"  # units to their source passages (provenance)
    WALK = "walk"  # second hops without an LLM: graph walks, feedback searches


PHASES = frozenset(p.value for p in QueryPhase)


class PhaseTimer:
    """Seconds per phase of one query, summed over repeats."""

    __slots__ = ("phases_s",)

    def __init__(self) -> None:
        self.phases_s: dict[str, float] = {}

    @contextmanager
    def phase(self, phase: QueryPhase) -> Iterator[None]:
        """Time the block as ``phase``; with tracing on it is a span of that name too
        (the query's steps in its trace: embed, dense_search, walk, judge, answer...)."""
        loaded_before = loads_so_far()
        started = time.perf_counter()
        try:
            with span(phase.value, {QUERY_PHASE: phase.value}):
                yield
        finally:
            # The embedding model's first use loads it inside the step that needed it:
            # that is reported as the query's embedder_load_s, not as the step's time.
            loaded = loads_so_far() - loaded_before
            self.add(phase, max(0.0, time.perf_counter() - started - loaded))

    def add(self, phase: QueryPhase, seconds: float) -> None:
        self.phases_s[phase.value] = self.phases_s.get(phase.value, 0.0) + seconds

    def add_all(self, phases_s: Mapping[str, float]) -> None:
        """Add another timer's phases (a sub-search's), keeping this one's order."""
        for name, seconds in phases_s.items():
            self.phases_s[name] = self.phases_s.get(name, 0.0) + seconds
