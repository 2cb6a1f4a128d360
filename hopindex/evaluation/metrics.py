"""Answer metrics (SQuAD-style EM, token F1, accuracy) and retrieval metrics (Recall@k).

These follow the shared conventions of docs/methods.md so that figures are comparable
with the papers: SQuAD normalisation, a multiset token overlap for F1, and the
maximum over the gold answer and its aliases.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

from hopindex.core.errors import InvalidInputError

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower-case, drop punctuation, drop a/an/the, collapse spaces."""
    lowered = text.lower()
    # Punctuation goes before articles, as in the SQuAD script: "the-end" -> "theend".
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    no_articles = _ARTICLES.sub(" ", no_punct)
    return " ".join(no_articles.split())


def _golds(answers: str | Sequence[str]) -> Sequence[str]:
    # A bare string is one answer; iterating it would score against single characters.
    golds = (answers,) if isinstance(answers, str) else answers
    if not golds:
        raise InvalidInputError("at least one gold answer is needed", where="answers")
    return golds


def _best(prediction: str, answers: str | Sequence[str],
          score: Callable[[str, str], float]) -> float:
    return max(score(prediction, gold) for gold in _golds(answers))


def _em(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def _f1(prediction: str, gold: str) -> float:
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(gold).split()
    if not predicted or not expected:
        # SQuAD v2 convention: two empty answers agree, one empty one scores 0.
        return float(predicted == expected)
    common = sum((Counter(predicted) & Counter(expected)).values())
    if common == 0:
        return 0.0
    precision = common / len(predicted)
    recall = common / len(expected)
    return 2 * precision * recall / (precision + recall)


def _accuracy(prediction: str, gold: str) -> float:
    expected = normalize_answer(gold)
    predicted = normalize_answer(prediction)
    # An answer that normalises to nothing ("the") would otherwise match everything.
    if not expected:
        return float(not predicted)
    return float(expected in predicted)


def exact_match(prediction: str, answers: str | Sequence[str]) -> float:
    """1.0 when the normalised prediction equals any normalised gold answer or alias."""
    return _best(prediction, answers, _em)


def token_f1(prediction: str, answers: str | Sequence[str]) -> float:
    """Token F1 with a multiset (Counter) overlap, the best over gold answer and aliases."""
    return _best(prediction, answers, _f1)


def answer_accuracy(prediction: str, answers: str | Sequence[str]) -> float:
    """1.0 when any normalised gold answer is a substring of the normalised prediction."""
    return _best(prediction, answers, _accuracy)


def recall_at_k(retrieved_passages: Sequence[str], gold: Sequence[str], k: int) -> float:
    """|gold ∩ top-k| / |gold|, exact strings; repeats in the ranking are dropped first so a
    passage retrieved twice (e.g. through two units) does not push another out of the top k."""
    if k < 1:
        raise InvalidInputError(f"k must be at least 1, got {k}", where="k")
    expected = set(gold)
    if not expected:
        raise InvalidInputError("a question without gold passages has no recall",
                                where="gold")
    top = list(dict.fromkeys(retrieved_passages))[:k]
    return len(expected.intersection(top)) / len(expected)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation, as numpy.percentile's default."""
    if not values:
        raise InvalidInputError("percentile of no values", where="values")
    if not 0 <= q <= 100:
        raise InvalidInputError(f"q must be within [0, 100], got {q}", where="q")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
