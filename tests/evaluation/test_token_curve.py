"""Cumulative tokens against queries served: each curve's points, where two curves cross
(the break-even number of queries), the default horizon and the choice of a log axis."""

from __future__ import annotations

import pytest

from hopindex.evaluation.token_curve import (
    MIN_HORIZON,
    TokenCurve,
    break_even,
    break_evens,
    curve_points,
    default_horizon,
    needs_log_scale,
    query_points,
)

# A costly offline build and two LLM calls per query, beside an iterative method on a
# cheap index and a retrieval-only method that costs nothing at all.
COMPACT = TokenCurve(label="compactrag", build_tokens=1_000_000, tokens_per_query=300)
ITERATIVE = TokenCurve(label="ircot", build_tokens=50_000, tokens_per_query=1_000)
FREE = TokenCurve(label="naive", build_tokens=0, tokens_per_query=0)


def test_a_curve_is_its_build_plus_n_times_its_tokens_per_query() -> None:
    """C(N) = B + N * q, from N = 0 (the build alone) to the horizon, both ends included."""
    assert COMPACT.at(0) == 1_000_000
    assert COMPACT.at(10) == 1_003_000
    points = curve_points(ITERATIVE, 1_000)
    assert points[0] == (0, 50_000)
    assert points[-1] == (1_000, 1_050_000)
    assert all(value == ITERATIVE.at(n) for n, value in points)


def test_query_points_are_whole_evenly_spread_and_bounded() -> None:
    """Every whole N up to a small horizon; at most 201 evenly spread ones for a large one;
    a horizon of 0 is the build alone."""
    assert query_points(0) == [0]
    assert query_points(7) == list(range(8))
    large = query_points(1_000_000)
    assert len(large) == 201 and large[0] == 0 and large[-1] == 1_000_000
    assert large[1] == 5_000
    with pytest.raises(ValueError, match="0 or more"):
        query_points(-1)


def test_crossing_curves_break_even_where_the_build_is_paid_back() -> None:
    """950,000 extra build tokens saving 700 tokens a query are paid back at N* = 1357.14:
    from the 1,358th query on, the costly build has used fewer tokens in all; the pair's
    order does not matter."""
    point = break_even(COMPACT, ITERATIVE)
    assert point is not None
    assert point == break_even(ITERATIVE, COMPACT)
    assert (point.payer, point.against, point.queries) == ("compactrag", "ircot", 1_358)
    assert point.at == pytest.approx(950_000 / 700)
    assert COMPACT.at(1_357) > ITERATIVE.at(1_357)
    assert COMPACT.at(1_358) <= ITERATIVE.at(1_358)
    assert point.note == "compactrag pays back its build against ircot after 1,358 queries"


def test_a_crossing_on_a_whole_query_is_not_pushed_to_the_next_by_rounding() -> None:
    """1.1 / 0.1 is 11.000000000000002 in floating point: the break-even is still the
    11th query, not the 12th."""
    point = break_even(TokenCurve("a", 1.1, 0.0), TokenCurve("b", 0.0, 0.1))
    assert point is not None and point.queries == 11


@pytest.mark.parametrize(("a", "b"), [
    # Parallel: the same tokens per query, whatever the builds.
    (TokenCurve("a", 1_000, 50), TokenCurve("b", 0, 50)),
    # The costlier build also costs more per query: it only falls further behind.
    (TokenCurve("a", 1_000, 60), TokenCurve("b", 0, 50)),
    # Equal builds: they start together at N = 0 and only part.
    (TokenCurve("a", 1_000, 10), TokenCurve("b", 1_000, 50)),
    # The same curve twice.
    (COMPACT, COMPACT),
    # Nothing spent by either.
    (FREE, TokenCurve("b", 0, 0)),
])
def test_curves_that_never_cross_after_the_first_query_have_no_break_even(
        a: TokenCurve, b: TokenCurve) -> None:
    """Parallel curves, a costlier build that also costs more per query, equal builds and
    identical curves never cross for N > 0: None, in either order."""
    assert break_even(a, b) is None
    assert break_even(b, a) is None


def test_break_evens_lists_every_crossing_pair_soonest_first() -> None:
    """Among several curves only the crossing pairs are listed, the soonest crossing first;
    a free method is never paid back against."""
    cheap_build = TokenCurve(label="indexrag", build_tokens=200_000, tokens_per_query=400)
    points = break_evens([ITERATIVE, FREE, COMPACT, cheap_build])
    assert [(p.payer, p.against, p.queries) for p in points] == [
        # 150,000 / 600 = 250 exactly.
        ("indexrag", "ircot", 250),
        ("compactrag", "ircot", 1_358),
        # 800,000 / 100.
        ("compactrag", "indexrag", 8_000)]


def test_the_default_horizon_passes_the_last_crossing_and_is_at_least_1000() -> None:
    """No crossing or an early one: MIN_HORIZON. A later one: 1.25 times past it, rounded
    up to 1, 2 or 5 times a power of ten."""
    assert default_horizon([]) == MIN_HORIZON == 1_000
    assert default_horizon([FREE, ITERATIVE]) == 1_000
    early = TokenCurve(label="early", build_tokens=50_000 + 700 * 400, tokens_per_query=300)
    assert default_horizon([early, ITERATIVE]) == 1_000  # crossing at 400
    # 1357.14 * 1.25 = 1696.4 -> 2000.
    assert default_horizon([COMPACT, ITERATIVE, FREE]) == 2_000
    late = TokenCurve(label="late", build_tokens=50_000 + 700 * 4_100, tokens_per_query=300)
    assert default_horizon([late, ITERATIVE]) == 10_000  # 5125 -> 10000


def test_a_log_axis_only_when_the_values_span_more_than_two_decades() -> None:
    """A million-token build beside a curve starting at zero spans far more than 100x: log.
    Two curves within a factor of ten: linear. Nothing spent anywhere: linear."""
    assert needs_log_scale([COMPACT, TokenCurve("b", 0, 100)], 1_000)
    assert not needs_log_scale([COMPACT, ITERATIVE], 1_000)
    assert not needs_log_scale([FREE], 1_000)
    assert not needs_log_scale([], 1_000)
