"""What a reranker reports about each request, for whoever watches (metrics).

As with the LLM client's ``LlmObserver``: the monitoring package installs its
Prometheus observer (``use_rerank_observer``) when a process configures its tasks and
the registry hands it to each reranker when metrics are on, so this package never
imports a metrics library.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Protocol

from hopindex.backends.llm.observer import CacheOperation

__all__ = ["CacheOperation", "NullRerankObserver", "RerankObserver", "RerankOutcome",
           "installed_rerank_observer", "use_rerank_observer"]


class RerankOutcome(enum.StrEnum):
    """How one request to the service (or one run of the local model) ended."""

    OK = "ok"
    RATE_LIMITED = "rate_limited"  # 429: retried
    TIMEOUT = "timeout"  # retried
    SERVER_ERROR = "server_error"  # 5xx and connection errors: retried
    REJECTED = "rejected"  # other 4xx: not retried
    UNAUTHORIZED = "unauthorized"  # 401/403: the key was refused
    UNREADABLE = "unreadable"  # an answer whose scores cannot be read
    FAILED = "failed"  # the local model raised


class RerankObserver(Protocol):
    def observe_cache(self, *, hit: bool) -> None:
        """One score-cache lookup."""

    def observe_cache_error(self, operation: CacheOperation) -> None:
        """One cache read or write that failed; the call went on without the cache."""

    def observe_wait(self, model: str, waited_s: float) -> None:
        """One rate-limiter admission and how long it waited."""

    def observe_request(self, model: str, outcome: RerankOutcome, duration_s: float) -> None:
        """One request sent to the service, or one run of the local model."""


class NullRerankObserver:
    """Watches nothing: the observer when metrics are off."""

    def observe_cache(self, *, hit: bool) -> None:
        return None

    def observe_cache_error(self, operation: CacheOperation) -> None:
        return None

    def observe_wait(self, model: str, waited_s: float) -> None:
        return None

    def observe_request(self, model: str, outcome: RerankOutcome, duration_s: float) -> None:
        return None


_observer_factory: Callable[[], RerankObserver] | None = None


def use_rerank_observer(factory: Callable[[], RerankObserver] | None) -> None:
    """Make ``factory`` the observer every reranker of this process gets (metrics on)."""
    global _observer_factory  # noqa: PLW0603  # one observer kind per process
    _observer_factory = factory


def installed_rerank_observer() -> RerankObserver | None:
    return _observer_factory() if _observer_factory is not None else None
