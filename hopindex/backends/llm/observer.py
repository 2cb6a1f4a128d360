"""What the LLM client reports about each call, for whoever watches (metrics).

The client calls an :class:`LlmObserver` at each step: the cache lookup (and any
cache read or write that failed), the wait for the rate limiter, and every request
it sends with its outcome, duration and tokens. The monitoring package installs its
Prometheus observer (``use_observer``) when a process configures its tasks, and
the registry hands it to each client when metrics are on, so this package never
imports a metrics library and costs nothing when they are off.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Protocol


class LlmOutcome(enum.StrEnum):
    """How one request to the provider ended (a bounded label set)."""

    OK = "ok"
    RATE_LIMITED = "rate_limited"  # 429
    TIMEOUT = "timeout"
    SERVER_ERROR = "server_error"  # 5xx and connection errors: retried
    REJECTED = "rejected"  # other 4xx: not retried
    UNAUTHORIZED = "unauthorized"  # a refused API key: stops the job


class CacheOperation(enum.StrEnum):
    """What the client asked of the response cache (a bounded label set)."""

    GET = "get"
    PUT = "put"


class ReplyFix(enum.StrEnum):
    """What a reply needed before it could be used (a bounded label set)."""

    REPAIR_CALL = "repair_call"  # a second request saying what was wrong
    BUDGET_RETRY = "budget_retry"  # a second request with a larger completion budget
    MODE_REFUSED = "mode_refused"  # the provider refused the output mode: stepped down
    COERCED = "coerced"  # values taken in lax mode (numbers as strings)
    DROPPED = "dropped"  # elements that did not fit, dropped from a reply
    RESCALED = "rescaled"  # a reply's 0-1 scores read on the 0-10 scale asked


class LlmObserver(Protocol):
    def observe_cache(self, stage: str, *, hit: bool) -> None:
        """One response-cache lookup."""

    def observe_cache_error(self, stage: str, operation: CacheOperation) -> None:
        """One cache read or write that failed; the call went on without the cache."""

    def observe_wait(self, stage: str, model: str, waited_s: float) -> None:
        """One rate-limiter admission and how long it waited."""

    def observe_request(self, stage: str, model: str, outcome: LlmOutcome, duration_s: float,
                        *, prompt_tokens: int = 0, completion_tokens: int = 0,
                        cost: float | None = None) -> None:
        """One request sent to the provider; tokens as the provider reported them, and
        their cost at the configured prices (None: unpriced)."""

    def observe_reply_fix(self, stage: str, model: str, fix: ReplyFix, count: int = 1) -> None:
        """What reading a reply needed (``count`` coerced values, dropped elements...)."""


class NullLlmObserver:
    """Watches nothing: the observer when metrics are off."""

    def observe_cache(self, stage: str, *, hit: bool) -> None:
        return None

    def observe_cache_error(self, stage: str, operation: CacheOperation) -> None:
        return None

    def observe_wait(self, stage: str, model: str, waited_s: float) -> None:
        return None

    def observe_request(self, stage: str, model: str, outcome: LlmOutcome, duration_s: float,
                        *, prompt_tokens: int = 0, completion_tokens: int = 0,
                        cost: float | None = None) -> None:
        return None

    def observe_reply_fix(self, stage: str, model: str, fix: ReplyFix, count: int = 1) -> None:
        return None


_observer_factory: Callable[[], LlmObserver] | None = None


def use_observer(factory: Callable[[], LlmObserver] | None) -> None:
    """Make ``factory`` the observer every LLM client of this process gets (metrics on)."""
    global _observer_factory  # noqa: PLW0603  # one observer kind per process
    _observer_factory = factory


def installed_observer() -> LlmObserver | None:
    return _observer_factory() if _observer_factory is not None else None
