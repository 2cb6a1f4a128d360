"""Per-question scores and a method's summary, from hand-built query results."""

from __future__ import annotations

import pytest

from hopindex.core.errors import InvalidInputError
from hopindex.evaluation.datasets import Question
from hopindex.evaluation.report import LlmCostPerQuery
from hopindex.evaluation.scoring import QuestionOutcome, score_question, summarize
from hopindex.methods.base import QueryResult, QueryUsage

GOLD_A = "Eiffel Tower\nA tower in Paris."
GOLD_B = "Gustave Eiffel\nAn engineer."
OTHER = "Louvre\nA museum."


def question(qid: str = "q1") -> Question:
    return Question(qid=qid, question="Which tower did Gustave Eiffel's company build?",
                    answers=("Eiffel Tower", "Tour Eiffel"),
                    gold_passages=(GOLD_A, GOLD_B), kind="bridge")


def result(answer: str | None, *, calls: int = 0, prompt: int = 0, completion: int = 0,
           cache_hits: int = 0) -> QueryResult:
    return QueryResult(question="q", method="m", index="i", passages=[], answer=answer,
                       usage=QueryUsage(llm_calls=calls, prompt_tokens=prompt,
                                        completion_tokens=completion, cache_hits=cache_hits))


def outcome(qid: str, *, answer: str | None = None, em: float | None = None,
            f1: float | None = None, acc: float | None = None, calls: int = 0,
            prompt: int = 0, completion: int = 0, cache_hits: int = 0,
            latency_s: float = 0.01, recall: float = 1.0) -> QuestionOutcome:
    return QuestionOutcome(qid=qid, recall={2: recall}, latency_s=latency_s, answer=answer,
                           exact_match=em, f1=f1, accuracy=acc, llm_calls=calls,
                           prompt_tokens=prompt, completion_tokens=completion,
                           cache_hits=cache_hits)


@pytest.mark.parametrize(("answer", "em", "f1", "acc"), [
    # An alias match counts as an exact match, after SQuAD normalisation.
    ("the Tour Eiffel.", 1.0, 1.0, 1.0),
    ("Eiffel Tower", 1.0, 1.0, 1.0),
    # Half the gold tokens with full precision: F1 2/3; "eiffel tower" is not in "eiffel".
    ("Eiffel", 0.0, 2 / 3, 0.0),
    # The gold inside a longer answer: accuracy 1, EM 0, F1 with precision 2/6 -> 0.5.
    ("It is the Eiffel Tower in Paris", 0.0, 0.5, 1.0),
    ("Big Ben", 0.0, 0.0, 0.0),
])
def test_score_question_scores_the_answer_against_gold_and_aliases(
        answer: str, em: float, f1: float, acc: float) -> None:
    """EM, F1 and accuracy are the best over the gold answer and its aliases, and the
    predicted answer is kept in the outcome."""
    scored = score_question(question(), result(answer), [GOLD_A], ks=(1, 2), latency_s=0.5)
    assert scored.answer == answer
    assert scored.exact_match == em
    assert scored.f1 == pytest.approx(f1)
    assert scored.accuracy == acc


def test_score_question_records_recall_latency_and_llm_usage() -> None:
    """Recall@k per k, the latency given, the retrieved passages and the query's LLM usage
    all land in the outcome."""
    scored = score_question(question("q7"), result("x", calls=3, prompt=900, completion=40,
                                                   cache_hits=1),
                            [OTHER, GOLD_B, GOLD_A], ks=(1, 2, 3), latency_s=0.25)
    assert scored.qid == "q7"
    assert scored.recall == {1: 0.0, 2: 0.5, 3: 1.0}
    assert scored.latency_s == 0.25
    assert scored.retrieved == [OTHER, GOLD_B, GOLD_A]
    assert (scored.llm_calls, scored.prompt_tokens, scored.completion_tokens,
            scored.cache_hits) == (3, 900, 40, 1)


def test_score_question_leaves_a_retrieval_only_result_unscored() -> None:
    """With no answer (a retrieval-only method) the answer scores are None, not 0."""
    scored = score_question(question(), result(None), [GOLD_A], ks=(2,), latency_s=0.1)
    assert scored.answer is None
    assert (scored.exact_match, scored.f1, scored.accuracy) == (None, None, None)
    assert scored.recall == {2: 0.5}
    assert scored.llm_calls == 0


def test_summarize_averages_answer_scores_over_every_question() -> None:
    """Means are over all questions, an unanswered one scoring 0, and the number answered
    is reported alongside."""
    outcomes = [
        outcome("a", answer="x", em=1.0, f1=1.0, acc=1.0),
        outcome("b", answer="y", em=0.0, f1=0.5, acc=1.0),
        outcome("c", answer="z", em=0.0, f1=0.25, acc=0.0),
        outcome("d"),
    ]
    report = summarize("indexrag", outcomes, ks=(2,))
    assert report.answers is not None
    assert report.answers.answered == 3
    assert report.answers.exact_match == pytest.approx(0.25)
    assert report.answers.f1 == pytest.approx(1.75 / 4)
    assert report.answers.accuracy == pytest.approx(0.5)


def test_summarize_gives_mean_and_p95_llm_cost_per_query() -> None:
    """Calls and tokens get a mean and a linearly interpolated 95th percentile per query;
    cache hits are the run's total."""
    calls = [0, 1, 2, 3, 10]
    outcomes = [outcome(str(i), answer="x", em=0.0, f1=0.0, acc=0.0, calls=c,
                        prompt=100 * c, completion=10 * c, cache_hits=i % 2)
                for i, c in enumerate(calls)]
    llm = summarize("ircot", outcomes, ks=(2,)).llm
    assert llm is not None
    # p95 of [0, 1, 2, 3, 10]: rank 3.8, so 3 + 0.8 * (10 - 3) = 8.6.
    assert (llm.calls_mean, llm.calls_p95) == pytest.approx((3.2, 8.6))
    assert (llm.prompt_tokens_mean, llm.prompt_tokens_p95) == pytest.approx((320, 860))
    assert (llm.completion_tokens_mean, llm.completion_tokens_p95) == pytest.approx((32, 86))
    assert llm.cache_hits == 2
    assert llm.used


def test_tokens_per_query_are_prompt_plus_completion_per_question() -> None:
    """The tokens of a question are its prompt plus its completion tokens: their mean is
    the sum of the two means, but their p95 is taken over each question's sum, not the
    sum of the two p95s (here 1000, where the p95s add up to 1802)."""
    outcomes = [outcome("a", calls=1, prompt=1000, completion=0),
                outcome("b", calls=1, prompt=0, completion=1000),
                outcome("c", calls=1, prompt=10, completion=10)]
    llm = summarize("compactrag", outcomes, ks=(2,)).llm
    assert llm is not None
    assert llm.tokens_mean == pytest.approx(2020 / 3)
    assert llm.tokens_p95 == pytest.approx(1000)
    assert llm.prompt_tokens_p95 + llm.completion_tokens_p95 == pytest.approx(1802)


def test_summarize_retrieval_only_method_has_no_answer_scores() -> None:
    """A method that answered nothing has answers None and an LLM cost of zero, which
    counts as unused; recall and latency are summarised as before."""
    outcomes = [outcome("a", recall=1.0, latency_s=0.010),
                outcome("b", recall=0.5, latency_s=0.020),
                outcome("c", recall=0.0, latency_s=0.030)]
    report = summarize("naive", outcomes, ks=(2,))
    assert report.method == "naive"
    assert report.n_questions == 3
    assert report.answers is None
    assert report.llm is not None
    assert not report.llm.used
    assert report.recall == {2: pytest.approx(0.5)}
    assert report.latency_p50_ms == pytest.approx(20.0)
    assert report.latency_p95_ms == pytest.approx(29.0)


def test_summarize_no_questions_gives_zeros_not_an_error() -> None:
    """An empty question list yields a report of zeros rather than a division error."""
    report = summarize("naive", [], ks=(1, 5))
    assert report.n_questions == 0
    assert report.recall == {1: 0.0, 5: 0.0}
    assert (report.latency_p50_ms, report.latency_p95_ms) == (0.0, 0.0)
    assert report.answers is None
    assert report.llm == LlmCostPerQuery(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, tokens_p95=0.0)


def test_score_question_reads_the_pool_size_from_the_trace() -> None:
    """A trace with pool_size puts it in the outcome; a trace without one leaves None."""
    traced = result(None)
    traced.trace = {"pool": "similarity", "pool_size": 2000}
    assert score_question(question(), traced, [GOLD_A], ks=(2,), latency_s=0.1).pool_size == 2000
    assert score_question(question(), result(None), [GOLD_A], ks=(2,),
                          latency_s=0.1).pool_size is None


def test_a_malformed_pool_size_names_the_method_and_field() -> None:
    """A pool size that is not a count stops scoring with an error naming the trace field
    and the method that wrote it."""
    bad = result(None)
    bad.trace = {"pool_size": "2000"}
    with pytest.raises(InvalidInputError) as raised:
        score_question(question(), bad, [GOLD_A], ks=(2,), latency_s=0.1)
    assert raised.value.where == "trace.pool_size of m"


def test_summarize_gives_tpq_and_the_median_pool() -> None:
    """TPQ is the mean latency in seconds ((0.1 + 0.2 + 0.9) / 3 = 0.4, where p50 is 0.2 s);
    the pool is the median over the questions that reported one."""
    outcomes = [outcome("a", latency_s=0.1), outcome("b", latency_s=0.2),
                outcome("c", latency_s=0.9)]
    for o, pool in zip(outcomes, (2000, None, 2002), strict=True):
        o.pool_size = pool
    report = summarize("sirerag:pool=similarity", outcomes, ks=(2,))
    assert report.tpq_s == pytest.approx(0.4)
    assert report.latency_p50_ms == pytest.approx(200.0)
    assert report.pool_size == 2001.0


def test_summarize_without_pools_reports_none() -> None:
    """A method whose traces name no pool has pool_size None (no pool column), and TPQ 0 for
    no questions, like its other figures."""
    assert summarize("naive", [outcome("a")], ks=(2,)).pool_size is None
    empty = summarize("naive", [], ks=(2,))
    assert (empty.tpq_s, empty.pool_size) == (0.0, None)


def test_a_degraded_query_still_counts_unanswered_and_is_reported() -> None:
    """A query whose answer step degraded (its LLM past the deadline) is scored like any
    other: its recall counts, its missing answer scores 0 over every question, and the
    report's ``degraded`` share says how many queries degraded."""
    lost = result(None)
    lost.degrade("answer", "answer: the query's LLM deadline of 2s passed")
    scored = [score_question(question("q1"), result("Eiffel Tower"), [GOLD_A], ks=(2,),
                             latency_s=0.1),
              score_question(question("q2"), lost, [GOLD_A, GOLD_B], ks=(2,), latency_s=2.0)]
    assert [o.degraded for o in scored] == [False, True]
    assert scored[1].recall == {2: 1.0} and scored[1].exact_match is None
    report = summarize("m", scored, ks=(2,))
    assert report.n_questions == 2 and report.extra == {"degraded": 0.5}
    assert report.answers is not None and report.answers.answered == 1
    assert report.answers.exact_match == 0.5
