"""Rank fusion behaves as the formulas say."""

import pytest

from hopindex.core.models import Hit
from hopindex.methods.retrieval.fusion import (
    FusionMode,
    fuse,
    percentile_rank_fusion,
    reciprocal_rank_fusion,
)


def hits(*ids: str) -> list[Hit]:
    return [Hit(i, 1.0 - n / 10) for n, i in enumerate(ids)]


def test_rrf_scores_sum_reciprocal_ranks() -> None:
    """A unit ranked 1st and 2nd scores 1/61 + 1/62 and beats one ranked 1st once."""
    fused = reciprocal_rank_fusion([hits("a", "b"), hits("b", "c")])
    scores = {h.unit_id: h.score for h in fused}
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert next(h.unit_id for h in fused) == "b"


def test_percentile_fusion_uses_rank_over_length() -> None:
    """Rank r of n scores 1 - r/n in each list."""
    fused = percentile_rank_fusion([hits("a", "b", "c", "d")])
    assert [h.score for h in fused] == [1.0, 0.75, 0.5, 0.25]


def test_ties_break_on_unit_id_for_repeatable_rankings() -> None:
    """Equal scores are ordered by id, so the same input always ranks the same."""
    fused = reciprocal_rank_fusion([hits("z"), hits("a")])
    assert [h.unit_id for h in fused] == ["a", "z"]


def test_none_mode_keeps_first_list_and_weights_must_match() -> None:
    """NONE returns the first list unchanged; mismatched weights are an error."""
    first = hits("x", "y")
    assert fuse([first, hits("y")], FusionMode.NONE) == first
    with pytest.raises(ValueError, match="weights"):
        fuse([first], FusionMode.RRF, weights=[1.0, 2.0])


def test_weights_scale_each_list() -> None:
    """A weight of zero removes a list's influence."""
    fused = reciprocal_rank_fusion([hits("a"), hits("b")], weights=[0.0, 1.0])
    assert fused[0].unit_id == "b"


def test_query_options_fetch_at_least_k_candidates() -> None:
    """k above the default candidate count raises the count instead of failing."""
    from hopindex.core.errors import InvalidInputError
    from hopindex.methods.base import QueryOptions

    assert QueryOptions(k=5).candidate_count == 50
    assert QueryOptions(k=100).candidate_count == 100
    with pytest.raises(InvalidInputError, match="candidates"):
        QueryOptions(k=10, candidates=5)
    with pytest.raises(InvalidInputError, match="k: must be between 1 and"):
        QueryOptions(k=0)
