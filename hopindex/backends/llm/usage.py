"""Usage accounting: what LLM calls cost, per stage for jobs and per query."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field, replace

from hopindex.backends.llm.batch_scope import BatchScope
from hopindex.backends.llm.query_policy import QueryDeadline
from hopindex.backends.llm.reply_shapes import ReplyNotes
from hopindex.core.budget import BudgetScope
from hopindex.core.errors import BudgetExhaustedError, ConfigError
from hopindex.core.models import LlmUsage, total_usage

# The per-stage record is the core model, so job records and meters share one shape.
StageUsage = LlmUsage

TOKENS_PER_PRICE_UNIT = 1_000_000


@dataclass(frozen=True, slots=True)
class LlmPrices:
    """What the provider charges per million prompt and completion tokens, in the
    operator's currency. Unpriced (both None) calls cost None, never a guessed 0."""

    input_per_mtok: float | None = None
    output_per_mtok: float | None = None

    def __post_init__(self) -> None:
        for name in ("input_per_mtok", "output_per_mtok"):
            price = getattr(self, name)
            if price is not None and not (math.isfinite(price) and price >= 0):
                raise ConfigError(f"LLM price {name} must be a number of 0 or more, "
                                  f"got {price}")
        if (self.input_per_mtok is None) != (self.output_per_mtok is None):
            raise ConfigError("LLM prices need both the input and the output price, or neither")

    @property
    def is_priced(self) -> bool:
        return self.input_per_mtok is not None and self.output_per_mtok is not None

    def cost_of(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """The money ``prompt_tokens`` and ``completion_tokens`` cost; None unpriced."""
        if self.input_per_mtok is None or self.output_per_mtok is None:
            return None
        return (prompt_tokens * self.input_per_mtok
                + completion_tokens * self.output_per_mtok) / TOKENS_PER_PRICE_UNIT


@dataclass(slots=True)
class UsageMeter:
    """Thread-safe per-stage counters; ``calls`` counts requests the provider answered."""

    stages: dict[str, LlmUsage] = field(default_factory=dict)
    # The job these calls are made for and its limits: each call reserves against it
    # first (backends/llm/budget.py). None: calls outside a budgeted job.
    budget: BudgetScope | None = None
    # The first refusal of that budget: later calls of the batch are refused with it
    # too, even one small enough to fit, so a paused job stops calling at once.
    refusal: BudgetExhaustedError | None = None
    # A query's one deadline for all its LLM calls, and the first LLM step of the query
    # that failed (after which no further call is made). None outside a query.
    deadline: QueryDeadline | None = None
    # A job's calls in batch mode (backends/llm/batch_calls.py): answered by provider
    # batches, the unanswered ones noted for the next. None: synchronous calls.
    batch: BatchScope | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record_call(self, stage: str, *, prompt_tokens: int, completion_tokens: int,
                    waited_s: float, retries: int, cost: float | None = None,
                    repair: bool = False, truncated: bool = False) -> None:
        with self._lock:
            usage = self.stages.setdefault(stage, LlmUsage())
            usage.add(LlmUsage(calls=1, prompt_tokens=prompt_tokens,
                               completion_tokens=completion_tokens, retries=retries,
                               limiter_wait_s=waited_s, cost=cost, repairs=int(repair),
                               truncated=int(truncated)))

    def record_reading(self, stage: str, notes: ReplyNotes) -> None:
        """What reading one reply forgave (values coerced, elements dropped, scores
        rescaled), counted on the stage (a query's ``usage.replies`` and trace)."""
        if notes.is_clean:
            return
        with self._lock:
            self.stages.setdefault(stage, LlmUsage()).add(LlmUsage(
                coerced=notes.coerced, dropped=notes.dropped, rescaled=notes.rescaled))

    def record_cache_hit(self, stage: str, *, cost: float | None = None) -> None:
        """One reply from the cache; ``cost`` is 0 when priced (nothing was paid) and
        None when not, so a stage answered wholly from the cache reads as priced."""
        with self._lock:
            self.stages.setdefault(stage, LlmUsage()).add(LlmUsage(cache_hits=1, cost=cost))

    def snapshot(self) -> dict[str, LlmUsage]:
        """A copy per stage, safe to hand to a job record while calls go on."""
        with self._lock:
            return {stage: replace(usage) for stage, usage in self.stages.items()}

    def total(self) -> LlmUsage:
        with self._lock:
            return total_usage(self.stages.values())
