"""Retry timing shared by every client of an OpenAI-compatible provider."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping

# OpenAI's millisecond header first: HTTP's Retry-After has whole seconds only, and
# rounding 50 ms up to 1 s would stall every worker sharing the budget.
_RETRY_AFTER_HEADERS = (("retry-after-ms", 0.001), ("retry-after", 1.0))


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """The pause a reply asks for, or None when it names no usable one.

    A value that is not a finite, non-negative number (an HTTP date, garbage) is
    skipped for the next header: a wrong pause is worse than the caller's backoff.
    """
    if headers is None:
        return None
    for name, scale in _RETRY_AFTER_HEADERS:
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if seconds >= 0 and math.isfinite(seconds):
            return seconds
    return None


def full_jitter_s(attempt: int, base_s: float, max_s: float) -> float:
    """Exponential backoff with full jitter: retries from many workers spread out
    instead of arriving together."""
    ceiling = min(max_s, base_s * 2 ** (attempt - 1))
    return random.uniform(0, ceiling)  # jitter spreads retries; no secrecy needed
