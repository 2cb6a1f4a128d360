"""Run questions through one or more methods and measure Recall@k, latency (p50, p95, TPQ),
answer scores, LLM cost and the size of the pool each method retrieved from."""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from hopindex.api.service import Hopindex
from hopindex.evaluation.datasets import Question
from hopindex.evaluation.report import EvalReport, MethodReport
from hopindex.evaluation.report_tokens import assign_build_tokens
from hopindex.evaluation.scoring import QuestionOutcome, score_question, summarize
from hopindex.evaluation.specs import expand_method_specs, parse_method_spec
from hopindex.methods.base import QueryOptions, QueryResult

# QuestionOutcome lives in scoring (pure, testable without a service) but stays importable
# from here, where evaluate_method's callers have always found it.
__all__ = [
    "DEFAULT_KS",
    "GoldMatch",
    "QuestionOutcome",
    "default_report_base",
    "evaluate",
    "evaluate_method",
    "gold_keys",
    "passage_texts",
]

DEFAULT_KS = (1, 2, 5, 10, 20)


class GoldMatch(enum.Enum):
    """How a retrieved document is matched with a gold passage."""

    # Its ``title\ntext`` equals the gold passage: a corpus ingested as records.
    TEXT = "text"
    # Its title equals the gold passage's: a corpus ingested as files (a PDF section's
    # text is the paragraph as the PDF's text layer gives it, line breaks and all).
    TITLE = "title"


def passage_texts(service: Hopindex, result: QueryResult,
                  match: GoldMatch = GoldMatch.TEXT) -> list[str]:
    """Retrieved source documents as gold-convention strings (``title\\ntext``, or the
    title alone when matching by title): a unit of any kind counts as retrieving the
    passages it came from."""
    documents = {d.doc_id: d for d in service.get_documents(
        result.index, [p.doc_id for p in result.passages])}
    return [documents[p.doc_id].title if match is GoldMatch.TITLE
            else documents[p.doc_id].passage_text
            for p in result.passages if p.doc_id in documents]


def gold_keys(question: Question, match: GoldMatch) -> Question:
    """The question with its gold passages as ``match`` compares them."""
    if match is GoldMatch.TEXT:
        return question
    return replace(question, gold_passages=tuple(dict.fromkeys(
        gold.split("\n", 1)[0] for gold in question.gold_passages)))


def evaluate_method(service: Hopindex, index: str, questions: Sequence[Question], method: str,
                    *, ks: Sequence[int] = DEFAULT_KS,
                    on_question: Callable[[QuestionOutcome], None] | None = None,
                    match: GoldMatch = GoldMatch.TEXT,
                    ) -> tuple[MethodReport, list[QuestionOutcome]]:
    """``method`` is a method spec (``specs``): a name, or a name with parameters."""
    spec = parse_method_spec(method)
    options = QueryOptions(k=max(ks), params=spec.params)
    outcomes: list[QuestionOutcome] = []
    for question in questions:
        started = time.perf_counter()
        result = service.query(index, question.question, method=spec.method, options=options)
        # The embedding model's load (the first question's, in a fresh process) is not
        # the method's latency: the result reports it apart.
        latency = time.perf_counter() - started - result.embedder_load_s
        outcome = score_question(gold_keys(question, match), result,
                                 passage_texts(service, result, match), ks=ks,
                                 latency_s=latency)
        outcomes.append(outcome)
        if on_question is not None:
            on_question(outcome)
    return summarize(spec.label, outcomes, ks), outcomes


def evaluate(service: Hopindex, index: str, dataset: str, questions: Sequence[Question],
             methods: Sequence[str], *, ks: Sequence[int] = DEFAULT_KS,
             on_question: Callable[[QuestionOutcome], None] | None = None) -> EvalReport:
    """A bare method with comparison variants (``bridgerag``) runs each variant."""
    reports = [evaluate_method(service, index, questions, spec.label, ks=ks,
                               on_question=on_question)[0]
               for spec in expand_method_specs(methods)]
    report = EvalReport(dataset=dataset, index=index,
                        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
                        methods=reports, ks=tuple(ks))
    # No build in this run: the index's job records say what building it cost.
    assign_build_tokens(report, service.list_jobs)
    return report


def default_report_base(out_dir: Path, index: str) -> Path:
    return out_dir / f"eval-{index}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
