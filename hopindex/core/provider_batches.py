"""A job's provider batches, as its record keeps them (backends/llm/batch_calls.py sends
them, scheduler/provider_batches.py follows them).

A batch is recorded before the provider hears of it, under a token of ours that the
batch carries in its metadata: a process killed between creating the batch and writing
its id leaves the token, by which the next one finds the batch instead of sending it
again. Its lines are named by their requests' keys, so the task that asked for them,
run again, knows which of its requests are answered, which are on their way and
which it still has to send.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import Any

# The metadata key a batch carries its record's token under.
TOKEN_KEY = "hopindex_token"


class BatchState(enum.StrEnum):
    """Where a batch is: ``submitting`` is ours (recorded, perhaps not sent yet); the
    others are the provider's ``status`` words (OpenAI's Batch API)."""

    SUBMITTING = "submitting"  # recorded; the provider may not have it yet
    VALIDATING = "validating"
    IN_PROGRESS = "in_progress"
    FINALIZING = "finalizing"
    CANCELLING = "cancelling"
    COMPLETED = "completed"
    FAILED = "failed"
    EXPIRED = "expired"
    CANCELLED = "cancelled"

    @property
    def ended(self) -> bool:
        """No further change: the results (or the failure) are there to read."""
        return self in _FINAL

    @property
    def has_results(self) -> bool:
        """Whether the provider wrote (part of) the lines' results: an expired or
        cancelled batch keeps the lines it finished."""
        return self in (BatchState.COMPLETED, BatchState.EXPIRED, BatchState.CANCELLED)


_FINAL = frozenset({BatchState.COMPLETED, BatchState.FAILED, BatchState.EXPIRED,
                    BatchState.CANCELLED})


@dataclass(slots=True)
class ProviderBatch:
    token: str
    phase: str
    # The requests' keys, one per line (each line's custom_id).
    keys: list[str]
    # The tasks that ended waiting for it: sent again once its results are stored.
    tasks: list[str] = field(default_factory=list)
    batch_id: str = ""
    state: BatchState = BatchState.SUBMITTING
    # The provider's counts: lines in all, answered, failed.
    total: int = 0
    completed: int = 0
    failed: int = 0
    # The job's budget held for it at the batch price until its results are read.
    held_tokens: int = 0
    held_cost: float = 0.0
    submitted_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    # Set once its results are stored, its usage counted and its tasks sent again.
    settled: bool = False
    error: str = ""

    @property
    def outstanding(self) -> bool:
        return not self.settled

    def as_dict(self) -> dict[str, Any]:
        return {"token": self.token, "phase": self.phase, "keys": list(self.keys),
                "tasks": list(self.tasks), "batch_id": self.batch_id,
                "state": self.state.value, "total": self.total, "completed": self.completed,
                "failed": self.failed, "held_tokens": self.held_tokens,
                "held_cost": self.held_cost, "submitted_at": self.submitted_at,
                "ended_at": self.ended_at, "settled": self.settled, "error": self.error}

    def view(self) -> dict[str, Any]:
        """What a person reading the job sees: no keys or task ids."""
        return {"batch_id": self.batch_id, "phase": self.phase, "state": self.state.value,
                "total": self.total or len(self.keys), "completed": self.completed,
                "failed": self.failed, "submitted_at": self.submitted_at,
                "ended_at": self.ended_at, "error": self.error}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProviderBatch:
        ended = data.get("ended_at")
        return cls(token=str(data["token"]), phase=str(data["phase"]),
                   keys=[str(k) for k in data.get("keys", [])],
                   tasks=[str(t) for t in data.get("tasks", [])],
                   batch_id=str(data.get("batch_id", "")),
                   state=BatchState(data.get("state", BatchState.SUBMITTING.value)),
                   total=int(data.get("total", 0)), completed=int(data.get("completed", 0)),
                   failed=int(data.get("failed", 0)),
                   held_tokens=int(data.get("held_tokens", 0)),
                   held_cost=float(data.get("held_cost", 0.0)),
                   submitted_at=float(data.get("submitted_at", 0.0)),
                   ended_at=None if ended is None else float(ended),
                   settled=bool(data.get("settled", False)), error=str(data.get("error", "")))


@dataclass(frozen=True, slots=True)
class BatchProgress:
    """A batch as the provider reports it now."""

    state: BatchState
    total: int = 0
    completed: int = 0
    failed: int = 0
    # Why a batch failed as a whole (its input refused), naming the lines.
    error: str = ""


@dataclass(frozen=True, slots=True)
class BatchYield:
    """What reading a finished batch stored: its lines answered and failed, and the
    tokens the answered ones used (the provider's usage)."""

    answered: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
