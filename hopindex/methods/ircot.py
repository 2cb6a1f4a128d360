"""``ircot``: retrieval interleaved with chain-of-thought (docs/methods.md, "IRCoT").

Each step shows the model what has been gathered and its reasoning so far, keeps
the first sentence of its reply, and searches with that sentence. The loop stops
when the reply says "answer is" (or DONE) or after three steps. A final answer
call reads the gathered units through balanced selection, so at most four calls
are made per question. A reasoning call that fails (the query's LLM deadline, an
outage) ends the loop with what was gathered; a failed answer call leaves the answer
None; both are named in ``degraded``.

Over an IndexRAG index the loop gathers AKUs and bridging facts (IRCoT over
IndexRAG, as in the paper's table); over any other index it gathers passages
(IRCoT alone).
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from functools import partial

from hopindex.backends.llm.chat import ChatRequest
from hopindex.backends.protocols import UnitFilter
from hopindex.core.ids import content_key
from hopindex.core.models import Hit, Unit, UnitKind
from hopindex.methods.base import (
    Degradation,
    QueryOptions,
    QueryResult,
    Retrieval,
    SearchContext,
)
from hopindex.methods.llm_steps import answer_step, llm_step, reasoning_step
from hopindex.methods.phases import PhaseTimer, QueryPhase
from hopindex.methods.plugin import LlmUse, MethodRegistry, QueryMethodSpec
from hopindex.methods.retrieval.answer import (
    OPTIONS_SCHEMA,
    AnswerStyle,
    answer_style_of,
    cite_answer,
    request_for,
)
from hopindex.methods.retrieval.expansion import expand_to_passages
from hopindex.methods.retrieval.kinds import FACTS, PASSAGES, preferred_filter
from hopindex.methods.retrieval.search import RETRIEVAL_STEP, retrieve_candidates
from hopindex.methods.retrieval.selection import K_BRIDGE, K, balanced_selection

MAX_STEPS = 3
STEP_K = 8  # units retrieved per step (docs/methods.md: 6-20)
MAX_GATHERED = 24  # units shown to the reasoning prompt, best first
REASON_STAGE = "reason"
REASON_MAX_TOKENS = 100
ANSWER_PHRASE = "answer is"
DONE = "DONE"

REASON_SYSTEM = ("You answer multi-hop questions by reasoning one step at a time over "
                 "retrieved passages.")
REASON_INSTRUCTIONS = ("Write ONE next sentence of reasoning grounded in the context. When "
                       "your reasoning reaches the answer, write: So the answer is <answer>.")

_PASSAGES = UnitFilter(kinds=(UnitKind.PASSAGE,))
_INDEXRAG_UNITS = UnitFilter(kinds=(UnitKind.AKU, UnitKind.BRIDGE))
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def reasoning_request(question: str, contexts: list[str], steps: list[str]) -> ChatRequest:
    context = "\n\n".join(" ".join(c.split()) for c in contexts)
    so_far = "\n".join(steps) if steps else "(none)"
    user = (f"Context:\n{context}\n\nQuestion: {' '.join(question.split())}\n"
            f"Reasoning so far:\n{so_far}\n\n{REASON_INSTRUCTIONS}")
    return ChatRequest(stage=REASON_STAGE, messages=(("system", REASON_SYSTEM), ("user", user)),
                       temperature=0.0, max_tokens=REASON_MAX_TOKENS)


def first_sentence(reply: str) -> str:
    text = " ".join(reply.split())
    for prefix in ("Reasoning:", "Thought:"):
        text = text.removeprefix(prefix).strip()
    return _SENTENCE_END.split(text, maxsplit=1)[0] if text else ""


def is_final(reply: str) -> bool:
    return ANSWER_PHRASE in reply.lower() or DONE in reply.split()


class IrcotMethod:
    name = "ircot"

    def __init__(self, context: SearchContext) -> None:
        self._context = context

    def run_query(self, index: str, question: str, options: QueryOptions) -> QueryResult:
        started = time.perf_counter()
        llm = self._context.require_llm(self.name)
        style = answer_style_of(options)  # a bad option is refused before any LLM call
        unit_filter = (preferred_filter(self._context.kinds_of(index), (FACTS, PASSAGES))
                       or UnitFilter(kinds=PASSAGES))
        retrieval = options.retrieval or Retrieval.DENSE
        usage = self._context.query_usage()
        degraded: list[Degradation] = []
        timer = PhaseTimer()
        best: dict[str, Hit] = {}
        units: dict[str, Unit] = {}
        steps: list[str] = []
        queries = [question]

        def gather(query: str, k: int, step: str) -> None:
            # Each retrieval is reranked against its own query (the question, then each
            # step's sentence): that is what it retrieves for.
            searched = replace(options, k=k, candidates=max(k, options.candidates or k))
            found = retrieve_candidates(self._context, index, query, searched,
                                        retrieval=retrieval, unit_filter=unit_filter,
                                        rerank_step=step)
            timer.add_all(found.phases_s)
            for hit in found.hits[:k]:
                units[hit.unit_id] = found.units[hit.unit_id]
                if hit.unit_id not in best or hit.score > best[hit.unit_id].score:
                    best[hit.unit_id] = hit

        def ranked() -> list[Hit]:
            # Scores of different queries are all cosines (or fused ranks) of one index,
            # so the best score a unit ever got orders the gathered pool.
            # Ties by content: a unit's id hashes the index's name.
            return sorted(best.values(), key=lambda h: (-h.score, content_key(
                units[h.unit_id].kind, units[h.unit_id].source_key, units[h.unit_id].text)))

        gather(question, max(STEP_K, options.k), RETRIEVAL_STEP)
        for number in range(1, MAX_STEPS + 1):
            request = reasoning_request(
                question, [units[h.unit_id].text for h in ranked()[:MAX_GATHERED]], steps)
            with timer.phase(QueryPhase.REASON):
                step = llm_step(degraded, reasoning_step(number),
                                partial(llm.complete, request, usage))
            if step is None:
                break  # what was gathered so far is the pool
            reply = step.content
            sentence = first_sentence(reply)
            if sentence:
                steps.append(sentence)
            if is_final(reply) or not sentence:
                break
            queries.append(sentence)
            gather(sentence, STEP_K, reasoning_step(number))
        pool = [units[h.unit_id] for h in ranked()]
        chosen = balanced_selection(pool, K, K_BRIDGE)
        with timer.phase(QueryPhase.EXPAND):
            passages = expand_to_passages(index, ranked(), units, self._context.units,
                                          options.k, documents=self._context.documents)
        with timer.phase(QueryPhase.ANSWER):
            answer = answer_step(self._context, degraded, llm, request_for(
                style, question, [u.text for u in chosen]), usage, passages=passages)
        trace = {"retrieval": retrieval.value,
                 "over": "facts" if unit_filter.kinds == FACTS else "passages",
                 "steps": steps, "queries": queries, "gathered": len(best),
                 "selected": [{"unit_id": u.unit_id, "kind": u.kind.value} for u in chosen]}
        text = answer.content.strip() if answer is not None else None
        if text is not None and style is AnswerStyle.CITED:
            text, trace["answer_citations"] = cite_answer(text, chosen, passages)
        result = QueryResult(
            question=question, method=self.name, index=index, passages=passages,
            answer=text, trace=trace,
            degraded=degraded, answer_truncated=answer is not None and answer.truncated,
        )
        result.usage.add_llm(usage.total())
        result.usage.phases_s = timer.phases_s
        result.latency_s = time.perf_counter() - started
        return result



def register(registry: MethodRegistry) -> None:
    registry.add_query_method(QueryMethodSpec(
        name=IrcotMethod.name, factory=IrcotMethod,
        reads=frozenset({UnitKind.PASSAGE, UnitKind.AKU}),
        llm_use=LlmUse.REQUIRED, summary="retrieval interleaved with chain-of-thought",
        options_schema=OPTIONS_SCHEMA))
