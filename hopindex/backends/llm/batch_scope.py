"""One task run's batch mode: where its calls look for their batch results, and the
requests it could not answer yet (backends/llm/batch_calls.py).

A call in batch mode is answered from the stored result of an earlier batch, or
noted here as a line for the next one and left unanswered (``BatchDeferred``). When
the run's calls have all ended, the runner hands the noted lines on in
``BatchPendingError``: the task records and sends them as one batch, and ends; the
poller sends it again once the batch's results are stored, and each call then finds
its result.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from hopindex.core.errors import JobPausedError


@dataclass(frozen=True, slots=True)
class PendingLine:
    """A request for the next batch: its key (the line's custom_id) and its body."""

    key: str
    stage: str
    body: dict[str, Any]
    # The request's estimates, which the job's budget holds at the batch price.
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(slots=True)
class BatchScope:
    """The job whose calls these are, and what they could not answer yet."""

    job_id: str
    max_rounds: int = 3
    _pending: dict[str, PendingLine] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def defer(self, line: PendingLine) -> None:
        with self._lock:
            self._pending.setdefault(line.key, line)

    def take_pending(self) -> list[PendingLine]:
        """The lines noted so far, in the order they were noted; the scope is left empty."""
        with self._lock:
            lines = list(self._pending.values())
            self._pending.clear()
        return lines

    @property
    def has_pending(self) -> bool:
        with self._lock:
            return bool(self._pending)


class BatchDeferred(Exception):  # noqa: N818  # a signal between the client and the runner
    """A call in batch mode whose result is not stored yet: its line waits in the scope.
    Never leaves the runner (which raises ``BatchPendingError`` for the whole run)."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"request {key[:12]} waits for a provider batch")


class BatchPendingError(JobPausedError):
    """The task's calls wait for a provider batch: it records and sends ``lines`` and
    ends without its work, which runs again once the results are in. Like a pause it
    is neither retried nor a failure, so it travels through a method's code as a
    paused job does."""

    def __init__(self, job_id: str, lines: list[PendingLine]) -> None:
        self.lines = lines
        super().__init__(f"{len(lines)} LLM requests wait for a provider batch", job_id=job_id)
