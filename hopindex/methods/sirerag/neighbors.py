"""Exact cosine nearest neighbours for UMAP, and BLAS held to one thread while clustering.

UMAP computes exact neighbours itself below ``UMAP_EXACT_LIMIT`` points and switches
to NN-descent (pynndescent) above it. NN-descent is approximate, and its numba
kernels cannot be cached on disk: every process compiles them again, ~40 s on a
two-core machine, before it clusters anything. For the levels SiReRAG clusters (tens
of thousands of 384-dimensional vectors at most) a blocked matrix product gives the
exact neighbours in seconds, so larger inputs get them that way too, handed to UMAP
as its ``precomputed_knn``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

UMAP_EXACT_LIMIT = 4096  # UMAP's own threshold for exact neighbours
_BLOCK_ROWS = 1024  # rows of the similarity matrix held at once: 1024 by n float32


def exact_neighbors(points: npt.NDArray[np.float32], k: int
                    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Each point's ``k`` nearest points by cosine distance, itself first (distance 0),
    nearest first with the lower index winning ties; as UMAP's ``knn_indices`` and
    ``knn_dists``. ``k`` must be between 1 and the number of points."""
    n = len(points)
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and the {n} points, got {k}")
    norms = np.linalg.norm(points, axis=1, keepdims=True)
    # A zero vector has no direction: UMAP's cosine puts it at distance 1 from all.
    unit = (points / np.where(norms > 0, norms, 1)).astype(np.float32)
    indices = np.empty((n, k), dtype=np.int64)
    distances = np.empty((n, k), dtype=np.float32)
    for start in range(0, n, _BLOCK_ROWS):
        stop = min(n, start + _BLOCK_ROWS)
        rows = np.arange(start, stop)
        distance = 1.0 - unit[start:stop] @ unit.T
        np.clip(distance, 0.0, 2.0, out=distance)
        distance[rows - start, rows] = -1.0  # itself first, whatever its duplicates
        nearest = np.argpartition(distance, k - 1, axis=1)[:, :k]
        chosen = np.take_along_axis(distance, nearest, axis=1)
        order = np.lexsort((nearest, chosen), axis=1)
        indices[start:stop] = np.take_along_axis(nearest, order, axis=1)
        distances[start:stop] = np.take_along_axis(chosen, order, axis=1)
    distances[:, 0] = 0.0
    return indices, distances


class _BlasLimit:
    """One process-wide limit, counted: set by the first caller in, lifted by the last out."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._limiter: Any = None

    def enter(self) -> None:
        from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

        with self._lock:
            if self._users == 0:
                self._limiter = threadpool_limits(limits=1, user_api="blas")
            self._users += 1

    def leave(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._limiter is not None:
                self._limiter.restore_original_limits()
                self._limiter = None


_BLAS_LIMIT = _BlasLimit()


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """BLAS on one thread while any caller is inside; restored when the last leaves.

    The mixtures multiply matrices of ten columns: OpenBLAS's threads only contend
    for them (a BIC search over 6,000 points ran 4.4 times slower with two BLAS
    threads than with one). The limit is process-wide, so overlapping callers share
    one and the setting from before the first caller is what comes back.
    """
    _BLAS_LIMIT.enter()
    try:
        yield
    finally:
        _BLAS_LIMIT.leave()
