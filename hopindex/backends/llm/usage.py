"""Usage accounting: what LLM calls cost, per stage for jobs and per query."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

from hopindex.core.models import LlmUsage, total_usage

# The per-stage record is the core model, so job records and meters share one shape.
StageUsage = LlmUsage


@dataclass(slots=True)
class UsageMeter:
    """Thread-safe per-stage counters; ``calls`` counts requests the provider answered."""

    stages: dict[str, LlmUsage] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record_call(self, stage: str, *, prompt_tokens: int, completion_tokens: int,
                    waited_s: float, retries: int) -> None:
        with self._lock:
            usage = self.stages.setdefault(stage, LlmUsage())
            usage.add(LlmUsage(calls=1, prompt_tokens=prompt_tokens,
                               completion_tokens=completion_tokens, retries=retries,
                               limiter_wait_s=waited_s))

    def record_cache_hit(self, stage: str) -> None:
        with self._lock:
            self.stages.setdefault(stage, LlmUsage()).cache_hits += 1

    def snapshot(self) -> dict[str, LlmUsage]:
        """A copy per stage, safe to hand to a job record while calls go on."""
        with self._lock:
            return {stage: replace(usage) for stage, usage in self.stages.items()}

    def total(self) -> LlmUsage:
        with self._lock:
            return total_usage(self.stages.values())
