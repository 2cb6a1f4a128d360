"""The six queues: each stage scales by the workers that take from it.

Plus the engine queue, which is not one of them: no one starts a worker for it. The
worker that takes ``embed`` over embedded engines owns them (one process per machine),
so it takes ``ENGINE_QUEUE`` too, and every other process's engine calls (queries,
index deletion, export) travel there. With server engines nothing is sent to it.
"""

from __future__ import annotations

import enum


class Queue(enum.StrEnum):
    STAGE1 = "stage1"
    STAGE2 = "stage2"
    EMBED = "embed"
    JUDGE = "judge"
    CONTROL = "control"
    # Webhook deliveries: a slow receiver waits here, never in front of job planning.
    WEBHOOKS = "webhooks"


ENGINE_QUEUE = "engine"
# The one task on it: an engine call (hopindex/backends/engine_calls.py).
ENGINE_TASK = "hopindex.engine"
