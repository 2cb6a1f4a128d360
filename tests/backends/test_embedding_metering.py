"""The embedding meter: per-context counting that a remote embedder reports into, priced
only when a price is set, and handed to the metrics observer only when metrics are on."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from hopindex.backends.embedder import metering
from hopindex.backends.embedder.metering import (
    EMBED_STAGE,
    metered_embeddings,
    record_embedding_request,
    report_embedding_usage,
    use_embedding_observer,
)
from hopindex.core.embedding_usage import EmbeddingUsage
from hopindex.core.settings import MetricsMode, Settings


def test_usage_is_priced_per_million_tokens_or_not_at_all() -> None:
    """Tokens times the price over a million; without a price, tokens and no cost."""
    with metered_embeddings() as meter:
        record_embedding_request(1200)
        record_embedding_request(800)
    priced = meter.usage(0.02)
    assert (priced.requests, priced.tokens) == (2, 2000)
    assert priced.cost == pytest.approx(2000 * 0.02 / 1e6)
    assert meter.usage(None) == EmbeddingUsage(requests=2, tokens=2000, cost=None)


def test_threads_share_the_meter_of_their_copied_context() -> None:
    """Requests from threads running in a copy of the metered context all land on its
    meter, without losing any to a race; a thread in a fresh context counts nowhere."""
    with metered_embeddings() as meter:
        context = contextvars.copy_context()

        def work() -> None:
            for _ in range(500):
                record_embedding_request(3)

        threads = [threading.Thread(target=context.run, args=(work,)) for _ in range(4)]
        # A fresh context has no meter: its requests count nowhere.
        threads.append(threading.Thread(target=contextvars.Context().run, args=(work,)))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert (meter.requests, meter.tokens) == (2000, 6000)


def test_concurrent_meters_in_separate_contexts_stay_apart() -> None:
    """Two queries metering at once in their own contexts each count only their calls."""
    results: dict[str, int] = {}
    barrier = threading.Barrier(2)

    def query(name: str, tokens: int) -> None:
        with metered_embeddings() as meter:
            barrier.wait()
            record_embedding_request(tokens)
            barrier.wait()
        results[name] = meter.tokens

    threads = [threading.Thread(target=query, args=(n, t)) for n, t in (("a", 5), ("b", 7))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {"a": 5, "b": 7}


@dataclass
class RecordingObserver:
    seen: list[tuple[str, str, int, int, float | None]] = field(default_factory=list)

    def observe_embeddings(self, stage: str, model: str, *, requests: int, tokens: int,
                           cost: float | None) -> None:
        self.seen.append((stage, model, requests, tokens, cost))


@pytest.fixture
def observer() -> Iterator[RecordingObserver]:
    installed = metering._observer_factory
    recording = RecordingObserver()
    use_embedding_observer(lambda: recording)
    yield recording
    use_embedding_observer(installed)


def test_usage_reaches_the_observer_only_when_metrics_are_on(
        observer: RecordingObserver) -> None:
    """Metrics on: the usage goes to the observer under the embed stage. Metrics off, or
    nothing used (a local embedder): the observer hears nothing."""
    used = EmbeddingUsage(requests=1, tokens=40, cost=0.5)
    report_embedding_usage(Settings(metrics=MetricsMode.ON), "m", used)
    report_embedding_usage(Settings(metrics=MetricsMode.OFF), "m", used)
    report_embedding_usage(Settings(metrics=MetricsMode.ON), "m", EmbeddingUsage())
    assert observer.seen == [(EMBED_STAGE, "m", 1, 40, 0.5)]
