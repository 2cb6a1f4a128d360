"""TPQ, pool sizes and TPER: hand-computed ratios and the choice of each group's baseline."""

from __future__ import annotations

from typing import Any

import pytest

from hopindex.core.errors import InvalidInputError
from hopindex.evaluation.efficiency import (
    EfficiencyRow,
    Tper,
    assign_tper,
    median_pool_size,
    pool_size_from_trace,
    time_per_query,
    tper,
)

SIRERAG = ("sirerag", "sirerag")


def test_time_per_query_is_the_mean_latency_in_seconds() -> None:
    """TPQ is the plain mean, not a percentile: [0.1, 0.2, 0.6] gives 0.3; none gives 0."""
    assert time_per_query([0.1, 0.2, 0.6]) == pytest.approx(0.3)
    assert time_per_query([2.5]) == 2.5
    assert time_per_query([]) == 0.0


def test_median_pool_size_over_the_questions_that_report_one() -> None:
    """A constant pool is its own median; an even count takes the midpoint; none is None."""
    assert median_pool_size([120, 120, 120]) == 120.0
    assert median_pool_size([100, 130, 120, 110]) == 115.0
    assert median_pool_size([]) is None


def test_pool_size_is_read_from_the_trace() -> None:
    """A whole number under pool_size is the pool; a trace without it has none."""
    assert pool_size_from_trace({"pool": "both", "pool_size": 3400}, where="w") == 3400
    assert pool_size_from_trace({"pool_size": 0}, where="w") == 0
    assert pool_size_from_trace({"pool": "both"}, where="w") is None
    assert pool_size_from_trace({"pool_size": None}, where="w") is None


@pytest.mark.parametrize("bad", [True, 12.5, "3400", -1, [3400]])
def test_a_pool_size_that_is_not_a_count_is_refused_naming_where(bad: Any) -> None:
    """A pool size that is not a whole number of units (a bool, a float, a string, a
    negative) stops the run with an error naming the trace field, rather than a TPER
    built on it."""
    with pytest.raises(InvalidInputError, match="whole number of units") as raised:
        pool_size_from_trace({"pool_size": bad}, where="trace.pool_size of sirerag")
    assert raised.value.where == "trace.pool_size of sirerag"


def test_tper_hand_computed() -> None:
    """TPQ 0.5 s over 3000 units against 0.4 s over 2000: (0.5/0.4)/(3000/2000) = 1.25/1.5
    = 5/6; equal TPQ over twice the pool is 0.5; a row against itself is exactly 1."""
    assert tper(0.5, 3000, 0.4, 2000) == pytest.approx(5 / 6)
    assert tper(0.4, 4000, 0.4, 2000) == pytest.approx(0.5)
    assert tper(0.4, 2000, 0.4, 2000) == 1.0
    # Time growing faster than the pool: above 1, not reasonably efficient.
    assert tper(1.0, 3000, 0.4, 2000) == pytest.approx(2.5 / 1.5)


def test_tper_is_undefined_when_the_baseline_is_zero() -> None:
    """A baseline of zero seconds or zero units (an empty index) gives None, not an error."""
    assert tper(0.5, 3000, 0.0, 2000) is None
    assert tper(0.5, 3000, 0.4, 0) is None
    assert tper(0.5, 0, 0.4, 0) is None


def test_the_smallest_pool_of_a_group_is_the_baseline() -> None:
    """Wherever the smallest pool sits in the run, it is B: it scores 1, every other row of
    its group is measured against it; a row without a pool gets nothing."""
    rows = [EfficiencyRow(group=SIRERAG, tpq_s=0.5, pool_size=3000.0),
            EfficiencyRow(group=("sirerag", "naive"), tpq_s=0.05, pool_size=None),
            EfficiencyRow(group=SIRERAG, tpq_s=0.4, pool_size=2000.0)]
    first, naive, baseline = assign_tper(rows)
    assert naive is None
    assert baseline == Tper(value=1.0, baseline=2, baseline_pool=2000.0)
    assert first is not None
    assert (first.baseline, first.baseline_pool) == (2, 2000.0)
    assert first.value == pytest.approx(5 / 6)


def test_equal_smallest_pools_take_the_earliest_row_as_baseline() -> None:
    """Two rows with the same smallest pool: the earlier one is B, the later one's TPER is
    its TPQ ratio alone."""
    rows = [EfficiencyRow(group=SIRERAG, tpq_s=0.6, pool_size=3000.0),
            EfficiencyRow(group=SIRERAG, tpq_s=0.4, pool_size=2000.0),
            EfficiencyRow(group=SIRERAG, tpq_s=0.5, pool_size=2000.0)]
    ratios = assign_tper(rows)
    assert [r.baseline for r in ratios if r is not None] == [1, 1, 1]
    assert [r.value for r in ratios if r is not None] == pytest.approx([1.0, 1.0, 1.25])


def test_groups_are_compared_apart_and_a_lone_pool_has_no_tper() -> None:
    """Rows on different indexes, or of different query methods, never share a baseline; a
    group with a single pool row has no TPER at all."""
    rows = [EfficiencyRow(group=("a", "sirerag"), tpq_s=0.5, pool_size=3000.0),
            EfficiencyRow(group=("b", "sirerag"), tpq_s=0.1, pool_size=100.0),
            EfficiencyRow(group=("a", "sirerag"), tpq_s=0.4, pool_size=2000.0),
            EfficiencyRow(group=("a", "other"), tpq_s=0.1, pool_size=10.0)]
    ratios = assign_tper(rows)
    assert ratios[1] is None and ratios[3] is None
    assert ratios[0] is not None and ratios[0].baseline == 2
    assert ratios[0].value == pytest.approx(5 / 6)


def test_a_row_without_tpq_keeps_its_baseline_but_no_value() -> None:
    """A pool with no TPQ (no questions measured) names its baseline yet has no ratio; a
    baseline without TPQ leaves its whole group without values."""
    rows = [EfficiencyRow(group=SIRERAG, tpq_s=None, pool_size=3000.0),
            EfficiencyRow(group=SIRERAG, tpq_s=0.4, pool_size=2000.0)]
    assert assign_tper(rows) == [Tper(None, 1, 2000.0), Tper(1.0, 1, 2000.0)]
    rows = [EfficiencyRow(group=SIRERAG, tpq_s=0.5, pool_size=3000.0),
            EfficiencyRow(group=SIRERAG, tpq_s=None, pool_size=2000.0)]
    assert assign_tper(rows) == [Tper(None, 1, 2000.0), Tper(None, 1, 2000.0)]


def test_no_rows_no_ratios() -> None:
    """An empty run has an empty list of ratios."""
    assert assign_tper([]) == []
