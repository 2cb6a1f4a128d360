"""LLM budgets as the CLI and the HTTP API take them: limits given by flag or field, the
budget an ingest runs with, and an index's default budget as callers see it.

One set of rules for both, so a budget given locally, through ``--api`` or to the
HTTP API directly is read and merged the same way (the limits themselves:
``core/budget.py``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from hopindex.core.budget import (
    MAX_COST,
    MAX_LLM_TOKENS,
    BudgetLimits,
    index_default,
    parse_max_cost,
    parse_max_tokens,
)
from hopindex.core.errors import NotFoundError
from hopindex.core.ids import validate_index_name

if TYPE_CHECKING:
    from hopindex.api.service import Hopindex
    from hopindex.backends.protocols import IndexInfo

# Where a command line's limits come from: the message of a bad value names the flag.
TOKENS_FLAG = "--max-llm-tokens"
COST_FLAG = "--max-cost"


def limits_from_flags(max_llm_tokens: str | None, max_cost: str | None) -> BudgetLimits:
    """The limits of ``--max-llm-tokens`` and ``--max-cost`` (None: not given); a
    negative or non-numeric value is an ``InvalidInputError`` naming its flag."""
    return BudgetLimits(max_llm_tokens=parse_max_tokens(max_llm_tokens, TOKENS_FLAG),
                        max_cost=parse_max_cost(max_cost, COST_FLAG))


def ingest_budget(service: Hopindex, index: str, given: BudgetLimits) -> BudgetLimits | None:
    """The budget an ingest of ``index`` runs with when ``given`` holds the limits asked
    for: None (the index's default, applied when the job is created) when none is
    given; otherwise the index's default with the given limits replacing its own, so a
    flag for one kind never drops the default's limit of the other."""
    if not given.is_limited:
        return None
    info = service.backends.state.get_index(validate_index_name(index))
    default = index_default(info.options) if info is not None else BudgetLimits()
    return default.with_overrides(max_llm_tokens=given.max_llm_tokens,
                                  max_cost=given.max_cost)


def budget_view(info: IndexInfo) -> dict[str, Any]:
    """An index's default budget: ``{"index", "budget"}``, the budget holding the limits
    set (an empty object: none)."""
    return {"index": info.name, "budget": index_default(info.options).as_dict()}


def index_budget(service: Hopindex, index: str) -> dict[str, Any]:
    """``budget_view`` of ``index``; ``NotFoundError`` when there is no such index."""
    info = service.backends.state.get_index(validate_index_name(index))
    if info is None:
        raise NotFoundError(f"no index {index!r}")
    return budget_view(info)


def set_index_budget(service: Hopindex, index: str, budget: BudgetLimits) -> dict[str, Any]:
    """Store ``budget`` as the default of ``index``'s later jobs (no limits: none);
    the default as it is then. A cost limit with no prices set is refused here, as an
    ingest giving it would be, rather than refusing every later ingest."""
    from hopindex.scheduler.submit import check_budget

    validate_index_name(index)
    check_budget(service.runtime, budget)
    return budget_view(service.set_index_budget(index, budget))


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
