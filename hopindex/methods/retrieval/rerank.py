"""The reranker stage: a cross-encoder (a ``/rerank`` service or a local model) reads
the query against each of a retrieval's top fused candidates and reorders them, before
the method selects from them or expands them to passages.

Which of a method's retrievals go through it is the method's choice, said per method
in docs/methods.md: each passes a step name where its evidence is ranked against a
query (``retrieve_candidates(..., rerank_step=...)`` or ``rerank_hits``). The stage
belongs to one query (``SearchContext.rerank``): on by default when a reranker is
configured (HOPINDEX_RERANK_URL or HOPINDEX_RERANK_MODEL_PATH), off with the option
``rerank=off``, which every method takes. The first ``top_n`` candidates
(HOPINDEX_RERANK_TOP_N) are reordered and carry the reranker's score; the rest follow
in their fused order with their fused score.

A reranker that fails (past its own retries) leaves the fused order and a ``degraded``
note; the query goes on, and the query's later retrievals skip the reranker rather than
wait for it again.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hopindex.backends.protocols import Reranker
from hopindex.core.errors import ConfigError, InvalidInputError, RerankError
from hopindex.core.logging import get_logger
from hopindex.core.models import Hit, Unit
from hopindex.core.tracing import span, spans
from hopindex.methods.base import ParamValue, QueryResult, SearchContext
from hopindex.methods.phases import QUERY_PHASE, QueryPhase

log = get_logger(__name__)

RERANK = "rerank"  # the option's name, and the step a failure is noted under


class RerankMode(enum.StrEnum):
    ON = "on"
    OFF = "off"


RERANK_OPTION: dict[str, Any] = {
    "type": "string", "enum": [m.value for m in RerankMode],
    "description": "on (the default when a reranker is configured: HOPINDEX_RERANK_URL or "
                   "HOPINDEX_RERANK_MODEL_PATH): the reranker reorders the top "
                   "HOPINDEX_RERANK_TOP_N fused candidates of the retrievals the method "
                   "reranks (docs/methods.md); off: the fused order, as without a reranker"}


def rerank_mode_of(params: Mapping[str, ParamValue], *, configured: bool) -> RerankMode:
    """The query's ``rerank`` option; ``on`` without a configured reranker is refused
    (``InvalidInputError`` naming ``params.rerank``) rather than silently not applied."""
    raw = params.get(RERANK)
    if raw is None:
        return RerankMode.ON if configured else RerankMode.OFF
    try:
        # A string only: the schema says so, and a JSON true would read "True".
        mode = RerankMode(raw.strip().lower() if isinstance(raw, str) else "")
    except ValueError:
        raise InvalidInputError(f"must be one of {', '.join(RerankMode)}, got {raw!r}",
                                where=f"params.{RERANK}") from None
    if mode is RerankMode.ON and not configured:
        raise InvalidInputError("no reranker is configured: set HOPINDEX_RERANK_URL (a "
                                "/rerank service) or HOPINDEX_RERANK_MODEL_PATH (a local "
                                "cross-encoder)", where=f"params.{RERANK}")
    return mode


def rerank_text(unit: Unit) -> str:
    """What the reranker reads of a unit: its text, after its title when it has one the
    text does not start with (a passage's title often names what it is about)."""
    title = str(unit.metadata.get("title", "") or "").strip()
    if title and not unit.text.lstrip().startswith(title):
        return f"{title}\n{unit.text}"
    return unit.text


@dataclass(slots=True)
class _Pass:
    step: str
    query: str
    seconds: float
    # In the reranked order: each candidate's place and score before and after.
    order: list[dict[str, Any]] = field(default_factory=list)
    failure: str | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"step": self.step, "query": self.query,
                                "seconds": round(self.seconds, 6)}
        if self.failure is not None:
            data["failed"] = self.failure
        else:
            data["order"] = self.order
        return data


class RerankStage:
    """One query's reranking: the reranker, how many candidates it reads, and what each
    pass did (for the trace), and whether it failed (for a degradation)."""

    def __init__(self, reranker: Reranker, top_n: int) -> None:
        self.reranker = reranker
        self.top_n = top_n
        self._passes: list[_Pass] = []
        self._failure: str | None = None

    def reorder(self, query: str, hits: Sequence[Hit], texts: Mapping[str, str], *,
                step: str) -> list[Hit]:
        """``hits`` with their first ``top_n`` (those with a text) reordered by the
        reranker, best first, carrying its scores; ties keep the fused order."""
        top = [h for h in hits[: self.top_n] if h.unit_id in texts]
        if not top:
            return list(hits)
        if self._failure is not None:
            self._passes.append(_Pass(step, query, 0.0, failure="skipped: the reranker "
                                                                 "failed earlier in this query"))
            return list(hits)
        started = time.perf_counter()
        try:
            scores = self.reranker.rerank_texts(query, [texts[h.unit_id] for h in top])
            if len(scores) != len(top):
                raise RerankError(f"the reranker gave {len(scores)} scores for {len(top)} "
                                  "texts")
        # A local model that cannot be loaded is the operator's to fix, and the trace
        # and the log say so; the query still answers, in its fused order.
        except (RerankError, ConfigError) as exc:
            self._failure = str(exc)
            self._passes.append(_Pass(step, query, time.perf_counter() - started,
                                      failure=str(exc)))
            log.warning("rerank_failed", step=step, model=self.reranker.model_name,
                        error=str(exc))
            return list(hits)
        ranked = sorted(range(len(top)), key=lambda i: (-scores[i], i))
        chosen = {h.unit_id for h in top}
        done = _Pass(step, query, time.perf_counter() - started, order=[
            {"unit_id": top[i].unit_id, "fused_rank": i + 1,
             "fused_score": round(top[i].score, 6), "score": round(float(scores[i]), 6)}
            for i in ranked])
        self._passes.append(done)
        reranked = [Hit(top[i].unit_id, float(scores[i])) for i in ranked]
        return reranked + [h for h in hits if h.unit_id not in chosen]

    def report(self, result: QueryResult) -> None:
        """The passes into the result's trace (``rerank``) and its reranking time into
        its phases; a failure into its degradations."""
        if not self._passes:
            return
        result.trace[RERANK] = {"model": self.reranker.model_name, "top_n": self.top_n,
                                "passes": [p.as_dict() for p in self._passes]}
        seconds = sum(p.seconds for p in self._passes)
        phase = QueryPhase.RERANK.value
        result.usage.phases_s[phase] = result.usage.phases_s.get(phase, 0.0) + seconds
        if self._failure is not None:
            result.degrade(RERANK, f"the reranker failed, the fused order was kept: "
                                   f"{self._failure}")


def rerank_hits(context: SearchContext, query: str, hits: Sequence[Hit],
                units: Mapping[str, Unit], *, step: str) -> list[Hit]:
    """``hits`` reordered by the query's reranker stage, or as they are when the query
    is not reranked."""
    stage = context.rerank
    if stage is None:
        return list(hits)
    with span(QueryPhase.RERANK.value, {QUERY_PHASE: QueryPhase.RERANK.value,
                                        "hopindex.rerank.step": step,
                                        spans.ITEMS: min(len(hits), stage.top_n)}):
        return stage.reorder(query, hits, {h.unit_id: rerank_text(units[h.unit_id])
                                           for h in hits[: stage.top_n] if h.unit_id in units},
                             step=step)


def rerank_scored(context: SearchContext, query: str, scored: Sequence[tuple[Unit, float]],
                  *, step: str) -> list[tuple[Unit, float]]:
    """``rerank_hits`` for a method that ranks units with their scores itself."""
    units = {unit.unit_id: unit for unit, _ in scored}
    hits = rerank_hits(context, query, [Hit(unit.unit_id, score) for unit, score in scored],
                       units, step=step)
    return [(units[h.unit_id], h.score) for h in hits]
