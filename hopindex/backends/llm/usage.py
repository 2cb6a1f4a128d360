"""Usage accounting: what LLM calls cost, per stage for jobs and per query."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass(slots=True)
class StageUsage:
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    limiter_wait_s: float = 0.0

    def add(self, other: StageUsage) -> None:
        self.calls += other.calls
        self.cache_hits += other.cache_hits
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.retries += other.retries
        self.limiter_wait_s += other.limiter_wait_s

    def as_dict(self) -> dict[str, float]:
        return {"calls": self.calls, "cache_hits": self.cache_hits,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "retries": self.retries,
                "limiter_wait_s": round(self.limiter_wait_s, 6)}


@dataclass(slots=True)
class UsageMeter:
    """Thread-safe per-stage counters; ``calls`` counts requests the provider answered."""

    stages: dict[str, StageUsage] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record_call(self, stage: str, *, prompt_tokens: int, completion_tokens: int,
                    waited_s: float, retries: int) -> None:
        with self._lock:
            usage = self.stages.setdefault(stage, StageUsage())
            usage.add(StageUsage(calls=1, prompt_tokens=prompt_tokens,
                                 completion_tokens=completion_tokens, retries=retries,
                                 limiter_wait_s=waited_s))

    def record_cache_hit(self, stage: str) -> None:
        with self._lock:
            self.stages.setdefault(stage, StageUsage()).cache_hits += 1

    def total(self) -> StageUsage:
        with self._lock:
            total = StageUsage()
            for usage in self.stages.values():
                total.add(usage)
            return total
