"""LLM budgets on the command line: limits given by flag, and budgets as text. (The
budget an ingest runs with and an index's default budget are the client's:
``api/client/views.py``; the limits themselves: ``core/budget.py``.)
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hopindex.core.budget import (
    MAX_COST,
    MAX_LLM_TOKENS,
    BudgetLimits,
    parse_max_cost,
    parse_max_tokens,
)

# Where a command line's limits come from: the message of a bad value names the flag.
TOKENS_FLAG = "--max-llm-tokens"
COST_FLAG = "--max-cost"


def limits_from_flags(max_llm_tokens: str | None, max_cost: str | None) -> BudgetLimits:
    """The limits of ``--max-llm-tokens`` and ``--max-cost`` (None: not given); a
    negative or non-numeric value is an ``InvalidInputError`` naming its flag."""
    return BudgetLimits(max_llm_tokens=parse_max_tokens(max_llm_tokens, TOKENS_FLAG),
                        max_cost=parse_max_cost(max_cost, COST_FLAG))


def budget_text(limits: dict[str, Any]) -> str:
    """``max_llm_tokens 50,000, max_cost 2``: limits (``BudgetLimits.as_dict``) named as
    the fields and flags that set them; ``none`` when there are none."""
    parts = []
    if limits.get(MAX_LLM_TOKENS) is not None:
        parts.append(f"{MAX_LLM_TOKENS} {int(limits[MAX_LLM_TOKENS]):,}")
    if limits.get(MAX_COST) is not None:
        parts.append(f"{MAX_COST} {plain_number(float(limits[MAX_COST]))}")
    return ", ".join(parts) or "none"


def plain_number(value: float) -> str:
    """``value`` as a person types it: no exponent, no trailing zeros (0.00002, 2, 1.5)."""
    return format(Decimal(repr(float(value))).normalize(), "f")
