"""The five queues (DESIGN.md §5): each stage scales by the workers that take from it."""

from __future__ import annotations

import enum


class Queue(enum.StrEnum):
    STAGE1 = "stage1"
    STAGE2 = "stage2"
    EMBED = "embed"
    JUDGE = "judge"
    CONTROL = "control"
