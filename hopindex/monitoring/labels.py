"""The bounded label values of hopindex's metrics (no metrics library needed to name them)."""

from __future__ import annotations

import enum


class TokenKind(enum.StrEnum):
    PROMPT = "prompt"
    COMPLETION = "completion"


class CacheResult(enum.StrEnum):
    HIT = "hit"
    MISS = "miss"


class QueryOutcome(enum.StrEnum):
    OK = "ok"
    ERROR = "error"


class TaskOutcome(enum.StrEnum):
    """A task run's end, from Celery's state at ``task_postrun``."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RETRIED = "retried"
    OTHER = "other"  # rejected, ignored, revoked


class DocumentOutcome(enum.StrEnum):
    INDEXED = "indexed"
    UNCHANGED = "unchanged"
    FAILED = "failed"
    DELETED = "deleted"
