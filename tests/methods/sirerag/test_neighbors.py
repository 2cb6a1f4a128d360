"""Exact cosine neighbours for UMAP, and the one-thread BLAS limit shared by callers."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info  # type: ignore[import-untyped]

from hopindex.methods.sirerag import neighbors
from hopindex.methods.sirerag.neighbors import exact_neighbors, single_threaded_blas


def brute_force(points: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    unit = points / np.linalg.norm(points, axis=1, keepdims=True)
    distance = 1 - unit @ unit.T
    np.fill_diagonal(distance, -1)
    order = np.lexsort((np.broadcast_to(np.arange(len(points)), distance.shape), distance))
    return order[:, :k], np.take_along_axis(np.clip(distance, 0, 2), order[:, :k], axis=1)


@pytest.mark.parametrize("k", [1, 5, 40])
def test_neighbours_match_a_full_sort_across_blocks(monkeypatch: pytest.MonkeyPatch,
                                                    k: int) -> None:
    """Blocks of 16 rows over 40 points give what sorting the whole matrix gives:
    each point itself first at distance 0, then the nearest."""
    monkeypatch.setattr(neighbors, "_BLOCK_ROWS", 16)
    points = np.random.default_rng(0).normal(size=(40, 8)).astype(np.float32)
    indices, distances = exact_neighbors(points, k)
    expected_indices, expected_distances = brute_force(points.astype(np.float64), k)
    assert (indices[:, 0] == np.arange(40)).all()
    assert (distances[:, 0] == 0).all()
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_allclose(distances[:, 1:], expected_distances[:, 1:], atol=1e-5)


def test_duplicates_tie_by_index_after_the_point_itself() -> None:
    """Three equal points: each lists itself, then the other two in index order."""
    points = np.array([[1, 0], [1, 0], [1, 0], [0, 1]], dtype=np.float32)
    indices, distances = exact_neighbors(points, 3)
    assert indices.tolist() == [[0, 1, 2], [1, 0, 2], [2, 0, 1], [3, 0, 1]]
    assert distances[:3].max() == pytest.approx(0, abs=1e-6)


def test_a_zero_vector_is_at_distance_one_from_every_point() -> None:
    points = np.array([[0, 0], [1, 0], [0, 1]], dtype=np.float32)
    _, distances = exact_neighbors(points, 3)
    assert distances[0].tolist() == [0, 1, 1]


@pytest.mark.parametrize("k", [0, 4])
def test_k_out_of_range_is_refused(k: int) -> None:
    with pytest.raises(ValueError, match="k must be between 1 and the 3 points"):
        exact_neighbors(np.eye(3, dtype=np.float32), k)


def blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_overlapping_callers_share_one_limit_and_restore_it() -> None:
    """Two callers inside at once (as two planning threads are): BLAS stays at one
    thread until the last leaves, whichever leaves first, and then the original count
    is back."""
    before = blas_threads()
    if not before:
        pytest.skip("no BLAS library loaded to limit")
    first, second = single_threaded_blas(), single_threaded_blas()
    first.__enter__()
    second.__enter__()
    assert blas_threads() == [1] * len(before)
    first.__exit__(None, None, None)  # the first out is not the last
    assert blas_threads() == [1] * len(before)
    second.__exit__(None, None, None)
    assert blas_threads() == before
