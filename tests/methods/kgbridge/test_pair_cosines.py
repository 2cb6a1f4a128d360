"""The links phase's S_emb: every pair of a key's vectors at once, as ``cosine`` gives
each pair."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hopindex.methods.kgbridge.links import cosine, pair_cosines


def test_pair_cosines_agree_with_the_pairwise_cosine() -> None:
    """Each off-diagonal entry is the cosine of its two vectors, to float precision."""
    rng = np.random.default_rng(7)
    vectors = [rng.normal(size=384).astype(np.float32) for _ in range(6)]
    scores = pair_cosines(vectors)
    for i, j in itertools.combinations(range(6), 2):
        assert scores[i, j] == pytest.approx(cosine(vectors[i].tolist(), vectors[j].tolist()),
                                             abs=1e-12)


def test_orthogonal_vectors_score_exactly_zero() -> None:
    """Vectors whose products cancel out score 0.0 exactly (normalising first leaves
    rounding noise, below the lossless bound of 0 half the time); a zero vector scores 0
    against any other, and a vector 1 against itself."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        x, y, z = rng.random(3).astype(np.float32)
        a = np.array([x, y, z], dtype=np.float32)
        b = np.array([y, -x, 0.0], dtype=np.float32)
        zero = np.zeros(3, dtype=np.float32)
        scores = pair_cosines([a, b, zero])
        assert scores[0, 1] == 0.0 and scores[0, 2] == 0.0 and scores[1, 2] == 0.0
        assert scores[0, 0] == pytest.approx(1.0)
