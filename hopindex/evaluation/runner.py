"""Run questions through one or more methods and measure Recall@k and latency."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from hopindex.api.service import Hopindex
from hopindex.evaluation.datasets import Question
from hopindex.evaluation.metrics import percentile, recall_at_k
from hopindex.evaluation.report import EvalReport, MethodReport
from hopindex.methods.base import QueryOptions, QueryResult

DEFAULT_KS = (1, 2, 5, 10, 20)


@dataclass(slots=True)
class QuestionOutcome:
    qid: str
    recall: dict[int, float]
    latency_s: float
    retrieved: list[str] = field(default_factory=list)


def passage_texts(service: Hopindex, result: QueryResult) -> list[str]:
    """Retrieved source documents as gold-convention strings (``title\\ntext``): a unit of
    any kind counts as retrieving the passages it came from."""
    documents = {d.doc_id: d for d in service.get_documents(
        result.index, [p.doc_id for p in result.passages])}
    return [documents[p.doc_id].passage_text for p in result.passages
            if p.doc_id in documents]


def evaluate_method(service: Hopindex, index: str, questions: Sequence[Question], method: str,
                    *, ks: Sequence[int] = DEFAULT_KS,
                    on_question: Callable[[QuestionOutcome], None] | None = None,
                    ) -> tuple[MethodReport, list[QuestionOutcome]]:
    options = QueryOptions(k=max(ks))
    outcomes: list[QuestionOutcome] = []
    for question in questions:
        started = time.perf_counter()
        result = service.query(index, question.question, method=method, options=options)
        latency = time.perf_counter() - started
        retrieved = passage_texts(service, result)
        outcome = QuestionOutcome(
            qid=question.qid, latency_s=latency, retrieved=retrieved,
            recall={k: recall_at_k(retrieved, question.gold_passages, k) for k in ks})
        outcomes.append(outcome)
        if on_question is not None:
            on_question(outcome)
    n = len(outcomes)
    latencies_ms = [o.latency_s * 1000 for o in outcomes]
    report = MethodReport(
        method=method, n_questions=n,
        recall={k: (sum(o.recall[k] for o in outcomes) / n if n else 0.0) for k in ks},
        latency_p50_ms=percentile(latencies_ms, 50) if n else 0.0,
        latency_p95_ms=percentile(latencies_ms, 95) if n else 0.0,
        extra={},
    )
    return report, outcomes


def evaluate(service: Hopindex, index: str, dataset: str, questions: Sequence[Question],
             methods: Sequence[str], *, ks: Sequence[int] = DEFAULT_KS,
             on_question: Callable[[QuestionOutcome], None] | None = None) -> EvalReport:
    reports = [evaluate_method(service, index, questions, m, ks=ks, on_question=on_question)[0]
               for m in methods]
    return EvalReport(dataset=dataset, index=index,
                      created_at=datetime.now(UTC).isoformat(timespec="seconds"),
                      methods=reports, ks=tuple(ks))


def default_report_base(out_dir: Path, index: str) -> Path:
    return out_dir / f"eval-{index}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
