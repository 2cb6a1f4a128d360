"""What embedding calls cost: one job's embed steps, or one query's embeddings.

Kept apart from ``LlmUsage``: a job's ``llm`` figures are the chat calls alone, which
add up to the LLM provider's chat counters, and embedding calls are a different price.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# A token at the cheapest prices is a fraction of a millionth; ten places keep it
# while dropping float noise from sums (the figure LlmUsage rounds to as well).
_COST_DECIMALS = 10
TOKENS_PER_PRICE_UNIT = 1_000_000


def embedding_cost(tokens: int, price_per_mtok: float | None) -> float | None:
    """The money ``tokens`` cost at ``price_per_mtok``; None when unpriced."""
    if price_per_mtok is None:
        return None
    return tokens * price_per_mtok / TOKENS_PER_PRICE_UNIT


@dataclass(slots=True)
class EmbeddingUsage:
    """Requests a remote embedding provider answered, the tokens it reported and their
    cost at the price in force when they were made (None: unpriced, or part of the
    tokens counted here were unpriced). Local embedders report nothing, so a job
    embedded on its own machine keeps this empty."""

    requests: int = 0
    tokens: int = 0
    cost: float | None = None

    @property
    def is_empty(self) -> bool:
        return not (self.requests or self.tokens)

    def add(self, other: EmbeddingUsage) -> None:
        # The rule of combined_cost, inlined: core/models.py imports this module.
        if not other.is_empty:
            if self.is_empty:
                self.cost = other.cost
            elif self.cost is None or other.cost is None:
                self.cost = None
            else:
                self.cost += other.cost
        self.requests += other.requests
        self.tokens += other.tokens

    def as_dict(self) -> dict[str, float]:
        data: dict[str, float] = {"requests": self.requests, "tokens": self.tokens}
        if self.cost is not None:  # unpriced: no figure at all, not a zero
            data["cost"] = round(self.cost, _COST_DECIMALS)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EmbeddingUsage:
        cost = data.get("cost")
        return cls(requests=int(data.get("requests", 0)), tokens=int(data.get("tokens", 0)),
                   cost=None if cost is None else float(cost))
