"""The ``Reranker`` contract: what every reranker must do, a service's client or a local
model. Quality is not checked here (it is the model's); the shape of the answer is:
one finite score per text, in the order given, the same every time, and nothing asked
of the service or the model for no texts.

Scores are compared with a tolerance (``atol``): a local model pads a batch to its
longest text, which moves the last float bits of the others, never more.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import ClassVar

import pytest

from hopindex.backends.protocols import Reranker
from hopindex.backends.rerank.observer import CacheOperation, RerankOutcome

QUERY = "Where was Marie Curie born?"
# Short and long, ASCII and not, related to the query and not.
TEXTS = (
    "Marie Curie was born in Warsaw, the capital of Poland.",
    "Photosynthesis converts light into chemical energy in plants.",
    "Skłodowska — 居里夫人 won two Nobel Prizes 🧪",
    "Warsaw is the capital and largest city of Poland. " * 20,
    "Marie Curie",
)


@dataclass
class RecordingRerankObserver:
    """Every report a reranker made, in order; safe to share between threads."""

    requests: list[tuple[str, RerankOutcome, float]] = field(default_factory=list)
    cache: list[bool] = field(default_factory=list)
    cache_errors: list[CacheOperation] = field(default_factory=list)
    waits: list[tuple[str, float]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def observe_cache(self, *, hit: bool) -> None:
        with self._lock:
            self.cache.append(hit)

    def observe_cache_error(self, operation: CacheOperation) -> None:
        with self._lock:
            self.cache_errors.append(operation)

    def observe_wait(self, model: str, waited_s: float) -> None:
        with self._lock:
            self.waits.append((model, waited_s))

    def observe_request(self, model: str, outcome: RerankOutcome, duration_s: float) -> None:
        with self._lock:
            self.requests.append((model, outcome, duration_s))

    def outcomes(self) -> list[RerankOutcome]:
        with self._lock:
            return [outcome for _, outcome, _ in self.requests]


class RerankerContract:
    """Subclass with a ``reranker`` fixture reporting to the ``observer`` fixture (a
    ``RecordingRerankObserver``); set ``expected_model_name`` when it is known."""

    expected_model_name: ClassVar[str | None] = None
    # How far two scores of the same (query, text) may differ.
    atol: ClassVar[float] = 1e-5

    @pytest.fixture
    def observer(self) -> RecordingRerankObserver:
        return RecordingRerankObserver()

    @pytest.fixture
    def reranker(self, observer: RecordingRerankObserver) -> Reranker:
        raise NotImplementedError("the reranker's test class provides the reranker fixture")

    def test_satisfies_protocol(self, reranker: Reranker) -> None:
        """A structural ``Reranker`` with a model name (the expected one, when given)."""
        assert isinstance(reranker, Reranker)
        assert isinstance(reranker.model_name, str)
        assert reranker.model_name
        if self.expected_model_name is not None:
            assert reranker.model_name == self.expected_model_name

    def test_one_finite_score_per_text(self, reranker: Reranker,
                                       observer: RecordingRerankObserver) -> None:
        """As many scores as texts, each a finite float; the request reported as ok."""
        scores = reranker.rerank_texts(QUERY, list(TEXTS))
        assert len(scores) == len(TEXTS)
        assert all(isinstance(s, float) and math.isfinite(s) for s in scores)
        assert observer.outcomes() == [RerankOutcome.OK]

    def test_scores_repeat(self, reranker: Reranker) -> None:
        """The same query over the same texts scores the same, call after call."""
        first = reranker.rerank_texts(QUERY, list(TEXTS))
        again = reranker.rerank_texts(QUERY, list(TEXTS))
        assert again == pytest.approx(first, abs=self.atol)

    def test_scores_follow_their_texts(self, reranker: Reranker) -> None:
        """Scores come in the order the texts were given, whatever order the service
        ranks them in: the texts reversed give the scores reversed, and a text scored
        alone scores as it did among the others."""
        scores = reranker.rerank_texts(QUERY, list(TEXTS))
        reversed_scores = reranker.rerank_texts(QUERY, list(reversed(TEXTS)))
        assert reversed_scores == pytest.approx(list(reversed(scores)), abs=self.atol)
        assert reranker.rerank_texts(QUERY, [TEXTS[2]]) == pytest.approx([scores[2]],
                                                                          abs=self.atol)

    def test_repeated_texts_are_each_scored(self, reranker: Reranker) -> None:
        """A text given twice gets a score at each place."""
        scores = reranker.rerank_texts(QUERY, [TEXTS[0], TEXTS[1], TEXTS[0]])
        assert len(scores) == 3
        assert scores[2] == pytest.approx(scores[0], abs=self.atol)

    def test_no_texts_no_scores_and_no_request(self, reranker: Reranker,
                                               observer: RecordingRerankObserver) -> None:
        """No texts: an empty list, and nothing asked of the service or the model."""
        assert reranker.rerank_texts(QUERY, []) == []
        assert observer.requests == []
        assert observer.cache == []

    def test_close_twice(self, reranker: Reranker) -> None:
        """Closing is idempotent."""
        reranker.rerank_texts(QUERY, [TEXTS[0]])
        reranker.close()
        reranker.close()
