"""What the durable event log holds (docs/architecture.md): job and index events, and the
webhooks that receive an index's events."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class EventType(enum.StrEnum):
    JOB_STARTED = "job.started"
    JOB_PROGRESS = "job.progress"
    JOB_FAILED = "job.failed"
    JOB_CANCELLED = "job.cancelled"
    JOB_PAUSED = "job.paused"
    JOB_RESUMED = "job.resumed"
    INDEX_READY = "index.ready"


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of the log; ``event_id`` is the log's own cursor (ordered, resumable)."""

    event_id: str
    event_type: EventType
    index: str
    job_id: str
    data: dict[str, Any]
    created_at: float

    def as_dict(self) -> dict[str, Any]:
        """The public shape: what ``--json``, server-sent events and webhook bodies carry."""
        return {"id": self.event_id, "type": self.event_type.value, "index": self.index,
                "job_id": self.job_id, "data": self.data, "created_at": self.created_at}



@dataclass(frozen=True, slots=True)
class Webhook:
    """A URL that receives one index's events, signed with ``secret`` (HMAC-SHA256,
    Standard Webhooks). ``secret`` is ``whsec_`` + base64 of the key bytes; one stored
    before that form is any other text, its UTF-8 bytes the key. ``url`` may hold
    credentials: show it to readers only through ``core.redact.redact_url``.

    ``allow_private`` is the decision the registering process made: whether the webhook
    may reach private, loopback and other internal addresses. It is stored with the
    webhook so every process delivering its events decides alike, whatever its own
    environment; None on webhooks stored before the decision was recorded, which the
    delivering process's setting decides."""

    webhook_id: str
    index: str
    url: str
    # Kept out of repr: a webhook logged or printed in a traceback must not leak it.
    secret: str = field(repr=False)
    created_at: float
    allow_private: bool | None = None
