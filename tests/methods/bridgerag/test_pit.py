"""PIT fusion (paper Eqs. 5-6) and the ranking's tie-breaks."""

from __future__ import annotations

import pytest

from hopindex.methods.bridgerag.pit import fuse_pit, pit, rank_positions


def test_pit_is_the_share_of_the_pool_at_or_below_each_score() -> None:
    """PIT(s, c) = |{c' : s(c') <= s(c)}| / |pool|: the best gets 1.0, the worst 1/n."""
    assert pit([0.3, 0.9, 0.1, 0.5]) == [0.5, 1.0, 0.25, 0.75]


def test_tied_scores_share_the_top_percentile_of_their_group() -> None:
    """Eq. 5 counts every equal score, so a tied group shares its highest percentile."""
    assert pit([7, 7, 3, 10, 7]) == [0.8, 0.8, 0.2, 1.0, 0.8]
    assert pit([5, 5, 5]) == [1.0, 1.0, 1.0]


def test_unscored_candidates_rank_below_every_score() -> None:
    """A candidate the judge left out (None) sits under the lowest real score."""
    assert pit([None, 0, None, 4]) == [0.5, 0.75, 0.5, 1.0]


def test_fusion_weighs_judge_and_svo_percentiles() -> None:
    """f = (1 - alpha) PIT(judge) + alpha PIT(svo); alpha 0 is the judge alone, 1 SVO alone."""
    judge, svo = [10, 0, 5], [0.1, 0.9, 0.5]
    assert fuse_pit(judge, svo, 0.1) == pytest.approx([0.9 + 0.1 / 3, 0.3 + 0.1, 0.6 + 0.2 / 3])
    assert fuse_pit(judge, svo, 0.0) == pytest.approx(pit(judge))
    assert fuse_pit(judge, svo, 1.0) == pytest.approx(pit(svo))
    with pytest.raises(ValueError, match="same pool"):
        fuse_pit([1, 2], [0.1], 0.1)


def test_svo_breaks_judge_ties_and_pool_order_breaks_the_rest() -> None:
    """Equal judge scores are ordered by SVO through the fusion; a full tie keeps the
    pool's own order, so rankings repeat exactly."""
    judge, svo = [8, 8, 8, 2], [0.2, 0.6, 0.6, 0.9]
    fused = fuse_pit(judge, svo, 0.1)
    assert rank_positions(fused, svo) == [1, 2, 0, 3]
    assert rank_positions([0.5, 0.5, 0.5], [0.1, 0.1, 0.1]) == [0, 1, 2]
    assert rank_positions([0.5, 0.5], [0.1, 0.3]) == [1, 0]
