"""A job's LLM budget: the most tokens and money its LLM calls may use before it pauses.

Shared by the CLI, the API and the index settings, so a budget is checked the same
way wherever it is given; the runtime's shared account of what a job spent is
``backends.llm.budget``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hopindex.core.errors import InvalidInputError

# Float sums of prices carry noise in the last places; a call that fits exactly must
# not be refused for it.
COST_TOLERANCE = 1e-12

MAX_LLM_TOKENS = "max_llm_tokens"
MAX_COST = "max_cost"


def parse_max_tokens(value: Any, where: str = MAX_LLM_TOKENS) -> int | None:
    """A token budget from user input (a number or its text); None when not given."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise InvalidInputError(f"must be a whole number of 0 or more, got {value!r}",
                                where=where)
    try:
        number = float(value) if isinstance(value, str) else value
        if not isinstance(number, int | float):
            raise TypeError(type(number).__name__)
        tokens = int(number)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInputError(f"must be a whole number of 0 or more, got {value!r}",
                                where=where) from None
    if tokens != number or tokens < 0:
        raise InvalidInputError(f"must be a whole number of 0 or more, got {value!r}",
                                where=where)
    return tokens


def parse_max_cost(value: Any, where: str = MAX_COST) -> float | None:
    """A money budget from user input (a number or its text); None when not given."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise InvalidInputError(f"must be a number of 0 or more, got {value!r}", where=where)
    try:
        cost = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"must be a number of 0 or more, got {value!r}",
                                where=where) from None
    if not (math.isfinite(cost) and cost >= 0):
        raise InvalidInputError(f"must be a number of 0 or more, got {value!r}", where=where)
    return cost


@dataclass(frozen=True, slots=True)
class BudgetLimits:
    """What a job may spend on LLM calls; None: no limit of that kind."""

    max_llm_tokens: int | None = None
    max_cost: float | None = None

    def __post_init__(self) -> None:
        parse_max_tokens(self.max_llm_tokens)
        parse_max_cost(self.max_cost)

    @property
    def is_limited(self) -> bool:
        return self.max_llm_tokens is not None or self.max_cost is not None

    def with_overrides(self, *, max_llm_tokens: int | None = None,
                       max_cost: float | None = None) -> BudgetLimits:
        """These limits with the ones given replaced (a resume that raises a budget)."""
        return BudgetLimits(
            max_llm_tokens=self.max_llm_tokens if max_llm_tokens is None else max_llm_tokens,
            max_cost=self.max_cost if max_cost is None else max_cost)

    def as_dict(self) -> dict[str, float]:
        data: dict[str, float] = {}
        if self.max_llm_tokens is not None:
            data[MAX_LLM_TOKENS] = self.max_llm_tokens
        if self.max_cost is not None:
            data[MAX_COST] = self.max_cost
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "") -> BudgetLimits:
        prefix = f"{where}." if where else ""
        return cls(max_llm_tokens=parse_max_tokens(data.get(MAX_LLM_TOKENS),
                                                   f"{prefix}{MAX_LLM_TOKENS}"),
                   max_cost=parse_max_cost(data.get(MAX_COST), f"{prefix}{MAX_COST}"))


@dataclass(frozen=True, slots=True)
class BudgetCharge:
    """What one LLM call reserves (its estimate) or spent (its usage)."""

    tokens: int
    cost: float = 0.0

    def __post_init__(self) -> None:
        if self.tokens < 0 or not (math.isfinite(self.cost) and self.cost >= 0):
            raise ValueError(f"a budget charge is never negative: {self.tokens}, {self.cost}")


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """A job's account: its limits, what settled calls spent, what calls in flight hold."""

    limits: BudgetLimits
    spent: BudgetCharge
    held: BudgetCharge

    def refusal(self, wanted: BudgetCharge) -> str:
        """Why a call of ``wanted`` does not fit: the reason a paused job shows."""
        parts = []
        limits = self.limits
        if (limits.max_llm_tokens is not None
                and self.spent.tokens + self.held.tokens + wanted.tokens > limits.max_llm_tokens):
            parts.append(f"max_llm_tokens {limits.max_llm_tokens}: {self.spent.tokens} spent, "
                         f"{self.held.tokens} held by calls in flight, next call needs "
                         f"about {wanted.tokens}")
        if (limits.max_cost is not None
                and self.spent.cost + self.held.cost + wanted.cost > limits.max_cost):
            parts.append(f"max_cost {limits.max_cost:g}: {self.spent.cost:.6g} spent, "
                         f"{self.held.cost:.6g} held by calls in flight, next call needs "
                         f"about {wanted.cost:.6g}")
        if not parts:
            return "LLM budget reached"
        first_call = self.spent.tokens == 0 and self.held.tokens == 0
        lead = ("LLM budget is below the cost of one call" if first_call
                else "LLM budget reached")
        return f"{lead}: {'; '.join(parts)}"

    def as_dict(self) -> dict[str, Any]:
        return {"limits": self.limits.as_dict(),
                "spent": {"tokens": self.spent.tokens, "cost": self.spent.cost},
                "held": {"tokens": self.held.tokens, "cost": self.held.cost}}


# Where an index keeps the budget its jobs get when they give none (IndexInfo.options).
INDEX_OPTION = "budget"


def index_default(options: dict[str, Any]) -> BudgetLimits:
    """The default budget an index's options hold (no limits when none is set)."""
    stored = options.get(INDEX_OPTION) or {}
    return BudgetLimits.from_dict(stored, where=INDEX_OPTION)


@dataclass(frozen=True, slots=True)
class BudgetScope:
    """The job an LLM call is made for, and the limits its record holds now: what the
    client reserves against before the call (``UsageMeter.budget``)."""

    job_id: str
    limits: BudgetLimits
