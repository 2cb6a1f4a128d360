"""Pool construction: SVO-15 by union_max, entity hits added, the top 20 by max score."""

from __future__ import annotations

import numpy as np
import pytest

from hopindex.core.models import Hit
from hopindex.methods.bridgerag.entities import entity_searches
from hopindex.methods.bridgerag.pool import (
    Source,
    build_pool,
    max_cosines,
    top_scores,
    union_max,
)


def hits(*pairs: tuple[str, float]) -> list[Hit]:
    return [Hit(u, s) for u, s in pairs]


def test_union_max_keeps_each_units_best_score() -> None:
    """A unit returned by several SVO queries keeps its highest cosine."""
    merged = union_max([hits(("a", 0.5), ("b", 0.4)), hits(("b", 0.7), ("c", 0.1))])
    assert merged == {"a": 0.5, "b": 0.7, "c": 0.1}


def test_top_scores_cut_repeats_on_ties() -> None:
    """The cut orders by score, then unit id: equal scores never reorder between runs."""
    assert top_scores({"b": 0.5, "a": 0.5, "c": 0.9}, 2) == [("c", 0.9), ("a", 0.5)]


def test_pool_is_svo_keep_plus_entity_hits_by_max_score() -> None:
    """Only the best svo_keep SVO hits enter; entity hits join with their own score (the
    higher one when also an SVO hit); the pool is cut at pool_size by max score."""
    svo = [hits(("s1", 0.9), ("s2", 0.8), ("s3", 0.3)), hits(("s2", 0.85), ("s4", 0.2))]
    e1 = hits(("s3", 0.95), ("e1a", 0.6))
    e2 = hits(("e2a", 0.7), ("s1", 0.1))
    pool = build_pool(svo, [(Source.E1, e1), (Source.E2, e2)], svo_keep=2, pool_size=4)
    assert [c.unit_id for c in pool] == ["s3", "s1", "s2", "e2a"]
    by_id = {c.unit_id: c for c in pool}
    # s3 fell below the SVO cut but entity search found it: its SVO score is still known.
    assert by_id["s3"].found_by == (Source.E1,) and by_id["s3"].svo_score == 0.3
    assert by_id["s3"].pool_score == 0.95
    assert by_id["s1"].found_by == (Source.SVO, Source.E2) and by_id["s1"].pool_score == 0.9
    assert by_id["s2"].svo_score == 0.85
    # Found by entity search alone: no SVO score yet (computed by direct cosine later).
    assert by_id["e2a"].svo_score is None and by_id["e2a"].found_by == (Source.E2,)


def test_pool_without_entities_is_svo_keep() -> None:
    """No entity searches: the pool is exactly SVO-k, in max-cosine order."""
    svo = [hits(*((f"u{i:02d}", 1 - i / 100) for i in range(10))),
           hits(*((f"v{i:02d}", 0.95 - i / 100) for i in range(10)))]
    pool = build_pool(svo, [], svo_keep=15, pool_size=20)
    assert len(pool) == 15
    assert [c.pool_score for c in pool] == sorted((c.pool_score for c in pool), reverse=True)
    assert all(c.found_by == (Source.SVO,) for c in pool)


def test_max_cosines_takes_the_best_query_per_unit() -> None:
    """Rows are unit vectors, so the dot product is the cosine; the best query counts."""
    queries = np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32)
    units = np.array([[0.6, 0.8, 0], [0, 0, 1]], dtype=np.float32)
    assert max_cosines(queries, units) == pytest.approx([0.8, 0.0])
    assert max_cosines(queries, np.zeros((0, 3), dtype=np.float32)) == []
    assert max_cosines(np.zeros((0, 3), dtype=np.float32), units) == [0.0, 0.0]


def test_a_repeated_entity_is_searched_once() -> None:
    """'e1 | e1' (Appendix C's single-entity reply) makes one search, not two."""
    assert entity_searches(("Paris", "paris")) == [(Source.E1, "Paris")]
    assert entity_searches(("Paris", "Lyon")) == [(Source.E1, "Paris"), (Source.E2, "Lyon")]
    assert entity_searches(("", "")) == []
