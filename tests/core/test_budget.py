"""Budget limits from user input: numbers or their text, never negative, and an error
that names the field otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from hopindex.core.budget import (
    BudgetCharge,
    BudgetLimits,
    BudgetStatus,
    parse_max_cost,
    parse_max_tokens,
)
from hopindex.core.errors import InvalidInputError


def test_limits_parse_numbers_and_their_text() -> None:
    """Integers, integral floats and numeric text are accepted; empty means no limit."""
    assert parse_max_tokens("5000") == 5000
    assert parse_max_tokens(5000.0) == 5000
    assert parse_max_tokens(None) is None and parse_max_tokens("") is None
    assert parse_max_cost("2.5") == 2.5
    assert parse_max_cost(0) == 0.0


@pytest.mark.parametrize("value", [-1, "-3", "lots", 1.5, True, [1], "nan"])
def test_bad_token_budgets_name_the_field(value: Any) -> None:
    """Negative, fractional, non-numeric or boolean token budgets are InvalidInputError
    naming ``max_llm_tokens``."""
    with pytest.raises(InvalidInputError, match=r"^max_llm_tokens: "):
        parse_max_tokens(value)


@pytest.mark.parametrize("value", [-0.01, "-1", "free", "inf", "nan", False, {}])
def test_bad_cost_budgets_name_the_field(value: Any) -> None:
    """Negative, infinite, non-numeric or boolean cost budgets name ``max_cost``."""
    with pytest.raises(InvalidInputError, match=r"^max_cost: "):
        parse_max_cost(value)


def test_limits_round_trip_and_name_the_nested_field() -> None:
    """``from_dict`` reads what ``as_dict`` wrote, and a bad value names its path."""
    limits = BudgetLimits(max_llm_tokens=100, max_cost=0.5)
    assert BudgetLimits.from_dict(limits.as_dict()) == limits
    assert BudgetLimits.from_dict({}) == BudgetLimits()
    with pytest.raises(InvalidInputError, match=r"^settings.max_cost: "):
        BudgetLimits.from_dict({"max_cost": -2}, where="settings")
    raised = limits.with_overrides(max_cost=2.0)
    assert raised == BudgetLimits(max_llm_tokens=100, max_cost=2.0)


def test_refusal_gives_the_figures_of_the_limit_that_binds() -> None:
    """The pause reason names the limit passed with spent, held and wanted figures."""
    status = BudgetStatus(BudgetLimits(max_llm_tokens=1000, max_cost=5.0),
                          spent=BudgetCharge(900, 1.0), held=BudgetCharge(50, 0.1))
    reason = status.refusal(BudgetCharge(100, 0.1))
    assert reason == ("LLM budget reached: max_llm_tokens 1000: 900 spent, 50 held by "
                      "calls in flight, next call needs about 100")
