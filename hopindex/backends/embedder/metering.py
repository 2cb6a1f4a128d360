"""Counting what a remote embedder was asked, without widening the ``Embedder`` protocol.

A caller that wants the figures (the embed task, a query) opens
``metered_embeddings()``; an embedder that talks to a paid provider (``OpenAiEmbedder``)
adds each reply's reported tokens to the meter of the current context, if there is
one. A context variable rather than an argument: the protocol stays what every
adapter implements, and concurrent queries in one process each see their own meter.
Local embedders report nothing: their cost is the machine's, not a price per token.

The figures reach Prometheus through an :class:`EmbeddingObserver` the monitoring
package installs (``use_embedding_observer``), so this package never imports a
metrics library, as with the LLM client's observer (``backends/llm/observer.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from hopindex.core.embedding_usage import EmbeddingUsage, embedding_cost
from hopindex.core.settings import MetricsMode, Settings

# The stage label of embedding figures in the LLM metric families: jobs and queries alike.
EMBED_STAGE = "embed"


@dataclass(slots=True)
class EmbeddingMeter:
    """Requests and tokens reported to this meter; safe to share between threads (a
    copied context carries the same meter into a pool)."""

    requests: int = 0
    tokens: int = 0
    # The meter open around this one: its figures include this one's.
    parent: EmbeddingMeter | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record_request(self, tokens: int) -> None:
        meter: EmbeddingMeter | None = self
        while meter is not None:
            with meter._lock:
                meter.requests += 1
                meter.tokens += tokens
            meter = meter.parent

    def usage(self, price_per_mtok: float | None) -> EmbeddingUsage:
        """What was recorded so far, priced at ``price_per_mtok`` (None: unpriced)."""
        with self._lock:
            requests, tokens = self.requests, self.tokens
        return EmbeddingUsage(requests=requests, tokens=tokens,
                              cost=embedding_cost(tokens, price_per_mtok))


_current_meter: ContextVar[EmbeddingMeter | None] = ContextVar("hopindex_embedding_meter",
                                                               default=None)


@contextmanager
def metered_embeddings() -> Iterator[EmbeddingMeter]:
    """A fresh meter that counts the embedding requests made inside the block."""
    meter = EmbeddingMeter(parent=_current_meter.get())
    token = _current_meter.set(meter)
    try:
        yield meter
    finally:
        _current_meter.reset(token)


def record_embedding_request(tokens: int) -> None:
    """One request a remote provider answered, with the tokens it reported; nothing
    happens outside ``metered_embeddings()``."""
    meter = _current_meter.get()
    if meter is not None:
        meter.record_request(max(0, tokens))


class EmbeddingObserver(Protocol):
    def observe_embeddings(self, stage: str, model: str, *, requests: int, tokens: int,
                           cost: float | None) -> None:
        """Requests and tokens a remote embedder reported, and their cost at the
        configured price (None: unpriced)."""


_observer_factory: Callable[[], EmbeddingObserver] | None = None


def use_embedding_observer(factory: Callable[[], EmbeddingObserver] | None) -> None:
    """Make ``factory`` the observer embedding figures go to in this process (metrics)."""
    global _observer_factory  # noqa: PLW0603  # one observer kind per process
    _observer_factory = factory


def report_embedding_usage(settings: Settings, model: str, usage: EmbeddingUsage,
                           stage: str = EMBED_STAGE) -> None:
    """Hand ``usage`` to the installed observer when metrics are on; an empty usage (a
    local embedder) reports nothing, so no series appears for it."""
    if usage.is_empty or settings.metrics is MetricsMode.OFF or _observer_factory is None:
        return
    _observer_factory().observe_embeddings(stage, model, requests=usage.requests,
                                           tokens=usage.tokens, cost=usage.cost)
