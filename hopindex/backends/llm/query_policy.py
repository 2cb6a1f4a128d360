"""The policy of a query's LLM calls: one deadline for all of them, and no call after
the first that failed.

Indexing can wait for a slow provider (eight attempts, a minute each: the work is
queued and a failure is redone by ``repair``). A query cannot: a user is waiting, and
the retrieval it already holds is an answer of its own. So a query gets one deadline
for every LLM call it makes (``HOPINDEX_QUERY_LLM_DEADLINE_S``, default 20 s), each
call a short timeout inside what is left of it, no repair call (every query method can
degrade instead), and once one LLM step has failed, the rest are skipped at once: a
provider that did not answer the first call will not answer the second in time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hopindex.core.errors import ConfigError, HopindexError, LlmUnavailableError

R = TypeVar("R")

DEFAULT_DEADLINE_S = 20.0
DEFAULT_CALL_TIMEOUT_S = 10.0
# Below this much time left a call is not started: it could not finish.
MIN_CALL_S = 0.05


@dataclass(slots=True)
class QueryDeadline:
    """One query's LLM deadline, started when the query's meter is made."""

    total_s: float = DEFAULT_DEADLINE_S
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    started: float = field(default_factory=time.monotonic)
    # The first LLM step that failed, as "stage: reason"; no call is made after it.
    failed: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if not (self.total_s > 0 and self.call_timeout_s > 0):
            raise ConfigError("the query LLM deadline and call timeout must be positive, got "
                              f"{self.total_s} and {self.call_timeout_s}")

    def remaining_s(self) -> float:
        return self.total_s - (time.monotonic() - self.started)

    def call_timeout(self, configured_s: float) -> float:
        """The timeout of the next call: the shortest of the client's own, the query's
        per-call one and what is left of the deadline."""
        return max(MIN_CALL_S, min(configured_s, self.call_timeout_s, self.remaining_s()))

    def check(self, stage: str) -> None:
        """Raise ``LlmUnavailableError`` when no call should start: a step already
        failed, or the deadline has passed."""
        with self._lock:
            failed = self.failed
        if failed is not None:
            raise LlmUnavailableError(f"{stage}: not called, an earlier LLM step of this "
                                      f"query failed ({failed})")
        if self.remaining_s() < MIN_CALL_S:
            self.fail(stage, f"the query's LLM deadline of {self.total_s:g}s passed")
            raise LlmUnavailableError(f"{stage}: the query's LLM deadline of "
                                      f"{self.total_s:g}s passed")

    def fail(self, stage: str, reason: str) -> None:
        """Record the first failed step; later ones keep it."""
        with self._lock:
            if self.failed is None:
                self.failed = f"{stage}: {reason}"


async def within_deadline(deadline: QueryDeadline | None, stage: str,
                          call: Coroutine[Any, Any, R]) -> R:
    """``call`` under the query's deadline, when there is one: not started when an
    earlier step failed or no time is left, cut when time runs out, and any failure
    recorded so the query's later LLM steps are skipped."""
    if deadline is None:
        return await call
    try:
        deadline.check(stage)
    except LlmUnavailableError:
        call.close()
        raise
    try:
        async with asyncio.timeout(max(0.0, deadline.remaining_s())):
            return await call
    except TimeoutError as exc:
        reason = f"the query's LLM deadline of {deadline.total_s:g}s passed"
        deadline.fail(stage, reason)
        raise LlmUnavailableError(f"{stage}: {reason}") from exc
    except HopindexError as exc:
        deadline.fail(stage, str(exc))
        raise
