"""Query side of ``compactrag``: exactly two LLM calls, whatever the number of hops.

1. Call 1 decomposes the question into sub-questions, each referring to at most one
   earlier one (``parse_decomposition`` never fails: a reply it cannot read, or no
   reply at all, leaves the question as its one sub-question, noted in ``degraded``).
2. Per sub-question, in dependency order, with no LLM: rewrite it with the answer of
   the one it refers to, retrieve the top QA units (``fetch_factor`` times as many
   fetched, repeats dropped by score: see ``_retrieve``), extract the answer span
   from them (``modules.py``: local models or model-free defaults).
3. Call 2 answers from the question and each sub-question's retrieved pairs (a failed
   call: the answer is None, the passages are returned all the same).

Passages are the retrieved units' documents, taken in turn from each sub-question's
ranked list (its best unit, then the next sub-question's best, …), so every hop is
represented early.

Departures from the paper (docs/methods.md, "Departures from the paper"): units are
embedded by the index's embedder, not Contriever; a failed call is not retried but
degrades the answer; the extractor reads the rewritten sub-question; and repeats are
dropped by question and answer, not by question alone.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from hopindex.backends.protocols import UnitFilter, Vector
from hopindex.core.models import Hit, Unit, UnitKind
from hopindex.methods.base import Degradation, QueryOptions, QueryResult, SearchContext
from hopindex.methods.compactrag.method import METHOD
from hopindex.methods.compactrag.modules import QaContext, open_modules
from hopindex.methods.compactrag.parsing import (
    Decomposition,
    QaPair,
    SubQuestion,
    normalise_question,
    parse_decomposition,
)
from hopindex.methods.compactrag.prompts import (
    SynthesisStep,
    decompose_request,
    synthesize_request,
)
from hopindex.methods.compactrag.text_replies import parse_synthesis
from hopindex.methods.llm_steps import ANSWER_STEP, announce_passages, llm_step
from hopindex.methods.phases import PhaseTimer, QueryPhase
from hopindex.methods.retrieval.expansion import expand_to_passages
from hopindex.methods.retrieval.rerank import rerank_scored

DECOMPOSE_STEP = "decompose"

_QA = UnitFilter(kinds=(UnitKind.QA_PAIR,))


class CompactRagMethod:
    name = METHOD

    def __init__(self, context: SearchContext) -> None:
        self._context = context

    def run_query(self, index: str, question: str, options: QueryOptions) -> QueryResult:
        started = time.perf_counter()
        context = self._context
        llm = context.require_llm(self.name)
        settings = context.method_settings(METHOD)
        extractor, rewriter = open_modules(settings.extractor, settings.rewriter)
        usage = context.query_usage()
        degraded: list[Degradation] = []
        timer = PhaseTimer()
        with timer.phase(QueryPhase.REWRITE):
            reply = llm_step(degraded, DECOMPOSE_STEP,
                             lambda: llm.complete(decompose_request(question), usage))
        if reply is None:
            # No decomposition: the question itself is the one sub-question, retrieved
            # and extracted without the LLM as any other.
            decomposition = Decomposition(
                sub_questions=(SubQuestion(index=1, text=" ".join(question.split())),),
                degraded=[])
        else:
            decomposition = parse_decomposition(reply.content, question)
        degraded.extend(Degradation(DECOMPOSE_STEP, note) for note in decomposition.degraded)
        answers: dict[int, tuple[str, str]] = {}  # sub-question index → (text, answer)
        steps: list[SynthesisStep] = []
        ranked: list[list[tuple[Unit, float]]] = []
        trace_steps: list[dict[str, Any]] = []
        # Sub-questions that wait for no answer are asked as written: one embedding
        # call for all of them (a comparison's two halves) instead of one each.
        with timer.phase(QueryPhase.EMBED):
            independent = list(dict.fromkeys(
                sub.text for sub in decomposition.sub_questions if sub.ref is None))
            embedded = dict(zip(independent, context.embedder.embed_texts(independent),
                                strict=True)) if len(independent) > 1 else {}
        for sub in decomposition.sub_questions:
            referenced = answers.get(sub.ref) if sub.ref is not None else None
            with timer.phase(QueryPhase.EXTRACT):
                rewritten = rewriter.rewrite_question(
                    sub.text, referenced[1] if referenced else None,
                    referenced[0] if referenced else None)
            found = self._retrieve(index, rewritten, settings.top_k, settings.fetch_factor,
                                   timer, vector=embedded.get(rewritten),
                                   step=f"sub-question {sub.index}")
            with timer.phase(QueryPhase.EXTRACT):
                # Departure (docs/methods.md): the authors' code gives the extractor the
                # sub-question as decomposed; the rewritten one names what units name.
                extracted = extractor.extract_answer(rewritten, [
                    QaContext(question=str(u.metadata.get("question", "")),
                              answer=str(u.metadata.get("answer", "")), score=score)
                    for u, score in found])
            answers[sub.index] = (rewritten, extracted.text)
            ranked.append(found)
            steps.append(SynthesisStep(question=rewritten, answer=extracted.text, pairs=tuple(
                QaPair(question=str(u.metadata.get("question", "")),
                       answer=str(u.metadata.get("answer", ""))) for u, _ in found)))
            trace_steps.append({"index": sub.index, "q": sub.text, "ref": sub.ref,
                                "rewritten": rewritten, "answer": extracted.text,
                                "units": [u.unit_id for u, _ in found]})
        with timer.phase(QueryPhase.EXPAND):
            hits, units = _interleave(ranked)
            passages = expand_to_passages(index, hits, units, context.units, options.k,
                                          documents=context.documents)
        # The synthesis reply is a JSON object whose answer is read once it is whole: a
        # streamed query hears the passages now and the answer in one piece at the end.
        announce_passages(context, passages)
        with timer.phase(QueryPhase.ANSWER):
            final = llm_step(degraded, ANSWER_STEP,
                             lambda: llm.complete(synthesize_request(question, steps), usage))
        synthesis = parse_synthesis(final.content) if final is not None else None
        if synthesis is not None:
            degraded.extend(Degradation(ANSWER_STEP, note) for note in synthesis.degraded)
        result = QueryResult(
            question=question, method=self.name, index=index, passages=passages,
            answer=synthesis.answer if synthesis is not None else None,
            trace={"sub_questions": trace_steps,
                   "modules": {"extractor": settings.extractor or "top-answer",
                               "rewriter": settings.rewriter or "substitution"}},
            degraded=degraded, answer_truncated=final is not None and final.truncated)
        result.usage.add_llm(usage.total())
        result.usage.phases_s = timer.phases_s
        result.latency_s = time.perf_counter() - started
        return result

    def _retrieve(self, index: str, question: str, top_k: int, fetch_factor: int,
                  timer: PhaseTimer, *, vector: Vector | None = None, step: str
                  ) -> list[tuple[Unit, float]]:
        """The top ``top_k`` QA units for ``question`` (its ``vector`` when already
        embedded), each fact once: of units stating the same question and answer
        (one per document that states it), the best-scored is kept. A reranked query
        reads more of them (its top_n) against the rewritten sub-question, which the
        extractor answers from, and keeps its top ``top_k``."""
        stage = self._context.rerank
        wanted = top_k if stage is None else max(top_k, stage.top_n)
        if vector is None:
            with timer.phase(QueryPhase.EMBED):
                vector = self._context.embedder.embed_query(question)
        with timer.phase(QueryPhase.DENSE_SEARCH):
            hits = self._context.vectors.search_vectors(index, vector, top_k * fetch_factor,
                                                        _QA)
        with timer.phase(QueryPhase.LOAD_UNITS):
            units = {u.unit_id: u for u in self._context.units.get_units(
                index, [h.unit_id for h in hits])}
        kept: list[tuple[Unit, float]] = []
        seen: set[tuple[str, str]] = set()
        for hit in hits:
            unit = units.get(hit.unit_id)
            if unit is None:
                continue
            # Departure (docs/methods.md): the authors' code drops a repeated question
            # even when its answer differs; the index keeps each document's answer, so
            # only a repeat of question and answer is dropped, and no fact is lost.
            key = _fact_key(unit)
            if key not in seen:
                seen.add(key)
                kept.append((unit, hit.score))
            if len(kept) == wanted:
                break
        if stage is None:
            return kept
        return rerank_scored(self._context, question, kept, step=step)[:top_k]


def _fact_key(unit: Unit) -> tuple[str, str]:
    """What makes two QA units the same fact: question and answer, case, punctuation and
    whitespace folded (hits come best first, so the first of a repeat is the best)."""
    question = str(unit.metadata.get("question", unit.text))
    return normalise_question(question), normalise_question(str(unit.metadata.get("answer", "")))


def _interleave(ranked: Sequence[Sequence[tuple[Unit, float]]]
                ) -> tuple[list[Hit], dict[str, Unit]]:
    """Each sub-question's first unit, then each one's second, …, each unit once."""
    hits: list[Hit] = []
    units: dict[str, Unit] = {}
    for rank in range(max((len(r) for r in ranked), default=0)):
        for found in ranked:
            if rank < len(found):
                unit, score = found[rank]
                if unit.unit_id not in units:
                    units[unit.unit_id] = unit
                    hits.append(Hit(unit_id=unit.unit_id, score=score))
    return hits, units
