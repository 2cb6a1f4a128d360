"""Scoring one question's result and summarising a method's outcomes: pure functions.

Kept apart from the runner, which needs a live service, so that the figures a
report shows can be checked on hand-built results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hopindex.evaluation.datasets import Question
from hopindex.evaluation.efficiency import median_pool_size, pool_size_from_trace, time_per_query
from hopindex.evaluation.metrics import (
    answer_accuracy,
    exact_match,
    percentile,
    recall_at_k,
    token_f1,
)
from hopindex.evaluation.report import AnswerScores, LlmCostPerQuery, MethodReport
from hopindex.methods.base import QueryResult


@dataclass(slots=True)
class QuestionOutcome:
    qid: str
    recall: dict[int, float]
    latency_s: float
    retrieved: list[str] = field(default_factory=list)
    # The method's answer and its scores; all None for a retrieval-only method.
    answer: str | None = None
    exact_match: float | None = None
    f1: float | None = None
    accuracy: float | None = None
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    # Some step of this query degraded (``QueryResult.degraded``: an LLM step that failed,
    # bridgerag's judge replaced by condition A, ...); the query still counts, unanswered
    # scoring 0.
    degraded: bool = False
    # Units the query retrieved from, when its method reports them (``efficiency``).
    pool_size: int | None = None


def score_question(question: Question, result: QueryResult, retrieved: Sequence[str], *,
                   ks: Sequence[int], latency_s: float) -> QuestionOutcome:
    """Recall@k for each k, answer scores against the gold answer and its aliases when the
    method answered, the query's LLM usage and the size of the pool it retrieved from."""
    outcome = QuestionOutcome(
        qid=question.qid, latency_s=latency_s, retrieved=list(retrieved),
        recall={k: recall_at_k(retrieved, question.gold_passages, k) for k in ks},
        answer=result.answer, llm_calls=result.usage.llm_calls,
        prompt_tokens=result.usage.prompt_tokens,
        completion_tokens=result.usage.completion_tokens,
        cache_hits=result.usage.cache_hits,
        degraded=bool(result.degraded),
        pool_size=pool_size_from_trace(result.trace, where=f"trace.pool_size of {result.method}"))
    if result.answer is not None:
        outcome.exact_match = exact_match(result.answer, question.answers)
        outcome.f1 = token_f1(result.answer, question.answers)
        outcome.accuracy = answer_accuracy(result.answer, question.answers)
    return outcome


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _p95(values: Sequence[float]) -> float:
    return percentile(values, 95) if values else 0.0


def _answer_scores(outcomes: Sequence[QuestionOutcome]) -> AnswerScores | None:
    answered = [o for o in outcomes if o.answer is not None]
    if not answered:
        # No answers at all is a retrieval-only method: "not measured", not a score of 0.
        return None
    n = len(outcomes)
    # Over every question, an unanswered one scoring 0: a method that answers only the
    # easy questions must not look better than one that attempts them all.
    return AnswerScores(
        answered=len(answered),
        exact_match=sum(o.exact_match or 0.0 for o in answered) / n,
        f1=sum(o.f1 or 0.0 for o in answered) / n,
        accuracy=sum(o.accuracy or 0.0 for o in answered) / n)


def _llm_cost(outcomes: Sequence[QuestionOutcome]) -> LlmCostPerQuery:
    calls = [float(o.llm_calls) for o in outcomes]
    prompt = [float(o.prompt_tokens) for o in outcomes]
    completion = [float(o.completion_tokens) for o in outcomes]
    tokens = [p + c for p, c in zip(prompt, completion, strict=True)]
    return LlmCostPerQuery(
        calls_mean=_mean(calls), calls_p95=_p95(calls),
        prompt_tokens_mean=_mean(prompt), prompt_tokens_p95=_p95(prompt),
        completion_tokens_mean=_mean(completion), completion_tokens_p95=_p95(completion),
        cache_hits=sum(o.cache_hits for o in outcomes), tokens_p95=_p95(tokens))


def summarize(method: str, outcomes: Sequence[QuestionOutcome],
              ks: Sequence[int]) -> MethodReport:
    """One method's report: mean Recall@k, latency percentiles and mean (TPQ), answer scores
    (None when the method gave no answer), LLM cost per query and the median pool size."""
    latencies_ms = [o.latency_s * 1000 for o in outcomes]
    return MethodReport(
        method=method, n_questions=len(outcomes),
        recall={k: _mean([o.recall[k] for o in outcomes]) for k in ks},
        latency_p50_ms=percentile(latencies_ms, 50) if outcomes else 0.0,
        latency_p95_ms=_p95(latencies_ms),
        tpq_s=time_per_query([o.latency_s for o in outcomes]),
        # Only when some query degraded: other runs keep the columns they always had.
        extra=({"degraded": _mean([float(o.degraded) for o in outcomes])}
               if any(o.degraded for o in outcomes) else {}),
        answers=_answer_scores(outcomes),
        llm=_llm_cost(outcomes),
        pool_size=median_pool_size([o.pool_size for o in outcomes if o.pool_size is not None]),
    )
