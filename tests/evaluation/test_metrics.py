"""Answer and retrieval metrics against hand-computed values."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hopindex.core.errors import InvalidInputError
from hopindex.evaluation.metrics import (
    answer_accuracy,
    exact_match,
    normalize_answer,
    percentile,
    recall_at_k,
    token_f1,
)


@pytest.mark.parametrize(("raw", "expected"), [
    ("The  Cat, sat!", "cat sat"),
    ("An apple a day", "apple day"),
    ("U.S.A.", "usa"),
    ("  Théâtre  (Paris) ", "théâtre paris"),
    ("anthem of the theatre", "anthem of theatre"),  # only whole-word articles go
    ("the-end", "theend"),  # punctuation is removed before articles, as in SQuAD
])
def test_normalize_answer_is_squad_normalisation(raw: str, expected: str) -> None:
    """Lower-case, no punctuation, no a/an/the as words, single spaces."""
    assert normalize_answer(raw) == expected


def test_exact_match_takes_the_best_alias() -> None:
    """EM is 1 when any alias matches after normalisation, else 0; a bare string is one gold."""
    assert exact_match("the Eiffel Tower.", ["Tour Eiffel", "Eiffel Tower"]) == 1.0
    assert exact_match("Eiffel", ["Tour Eiffel", "Eiffel Tower"]) == 0.0
    assert exact_match("Paris", "paris") == 1.0
    # A bare string must not be treated as a sequence of one-letter answers.
    assert exact_match("p", "paris") == 0.0


def test_token_f1_hand_computed() -> None:
    """"the cat sat on the mat" vs "a cat on a mat": pred {cat,sat,on,mat}, gold {cat,on,mat};
    overlap 3, P=3/4, R=1, F1=6/7."""
    assert token_f1("the cat sat on the mat", "a cat on a mat") == pytest.approx(6 / 7)


def test_token_f1_uses_multiset_overlap() -> None:
    """"paris paris" vs "paris": a Counter overlap counts paris once (P=1/2, R=1, F1=2/3);
    a set overlap would wrongly give 1."""
    assert token_f1("paris paris", "paris") == pytest.approx(2 / 3)


def test_token_f1_max_over_aliases_and_empty_cases() -> None:
    """F1 is the best over aliases; no overlap is 0; two empty answers agree (SQuAD v2)."""
    assert token_f1("new york city", ["NYC", "New York"]) == pytest.approx(0.8)
    assert token_f1("london", ["paris"]) == 0.0
    assert token_f1("the", ["a"]) == 1.0
    assert token_f1("", ["paris"]) == 0.0


def test_answer_accuracy_is_normalised_substring() -> None:
    """Acc is 1 when a normalised gold is inside the normalised prediction."""
    assert answer_accuracy("It is Paris, France.", ["paris"]) == 1.0
    assert answer_accuracy("It is Lyon.", ["paris", "lyon"]) == 1.0
    assert answer_accuracy("It is Lyon.", ["paris"]) == 0.0
    # A gold that normalises to nothing matches only an empty prediction, not everything.
    assert answer_accuracy("anything", ["The"]) == 0.0


def test_answer_metrics_need_a_gold_answer() -> None:
    """No gold answers at all is a caller error, not a silent 0."""
    with pytest.raises(InvalidInputError):
        exact_match("x", [])


def test_recall_at_k_hand_computed() -> None:
    """Ranking [a, a, b, c] dedupes to [a, b, c]; gold {b, d}: R@1=0, R@2=1/2, R@3=1/2."""
    ranking = ["a", "a", "b", "c"]
    gold = ["b", "d"]
    assert recall_at_k(ranking, gold, 1) == 0.0
    assert recall_at_k(ranking, gold, 2) == 0.5
    assert recall_at_k(ranking, gold, 3) == 0.5
    assert recall_at_k(["d", "x", "b"], gold, 10) == 1.0


def test_recall_at_k_is_exact_string_matching() -> None:
    """A passage differing by whitespace or case is not the gold passage."""
    assert recall_at_k(["Title\ntext "], ["Title\ntext"], 5) == 0.0
    assert recall_at_k(["title\ntext"], ["Title\ntext"], 5) == 0.0


def test_recall_at_k_rejects_bad_arguments() -> None:
    """k below 1 and an empty gold set have no meaningful recall and raise."""
    with pytest.raises(InvalidInputError):
        recall_at_k(["a"], ["a"], 0)
    with pytest.raises(InvalidInputError):
        recall_at_k(["a"], [], 5)


def test_percentile_hand_computed() -> None:
    """[1, 2, 3, 4]: p50 = 2.5; p95 at rank 2.85 = 3.85; p0/p100 are min/max."""
    values = [4.0, 1.0, 3.0, 2.0]
    assert percentile(values, 50) == pytest.approx(2.5)
    assert percentile(values, 95) == pytest.approx(3.85)
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 4.0
    assert percentile([7.0], 95) == 7.0


def test_percentile_matches_numpy_linear() -> None:
    """On random data, every percentile equals numpy.percentile's default (linear)."""
    rng = random.Random(7)
    for size in (2, 3, 10, 101):
        values = [rng.uniform(0, 1000) for _ in range(size)]
        for q in (1, 25, 50, 90, 95, 99):
            assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_percentile_rejects_bad_arguments() -> None:
    """No values, or q outside [0, 100], raise."""
    with pytest.raises(InvalidInputError):
        percentile([], 50)
    with pytest.raises(InvalidInputError):
        percentile([1.0], 101)
