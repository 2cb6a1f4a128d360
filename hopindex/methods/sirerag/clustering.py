"""The clustering step of both SiReRAG trees: RAPTOR's soft UMAP + Gaussian-mixture
clustering ("RAPTOR: Recursive Abstractive Processing for Tree-Organized Retrieval",
arXiv 2401.18059), with a token cap per cluster.

One pass over a set of nodes:

1. Global: UMAP (cosine) to ``reduced_dims`` dimensions with ``int(sqrt(n - 1))``
   neighbours, then a Gaussian mixture whose component count (1 up to
   ``max_components``, and fewer than the nodes) minimises the BIC. Assignment is
   soft: a node joins every component whose posterior exceeds
   ``membership_threshold``, and only those. A node whose probability many components
   split, none above the threshold, joins no cluster, as in the authors' code (see
   ``soft_memberships``): it stays in the pool with no summary above it.
   The search over component counts stops early once ``bic_patience`` counts in a
   row did not lower the BIC (see ``ClusterPolicy``).
2. Local: inside each global cluster, the same with ``local_neighbors`` neighbours.
   Each local cluster is one output cluster.

A cluster whose members' tokens exceed ``max_cluster_tokens`` is clustered again
(one more pass over its members alone), at most ``max_depth`` times deep. Where that
cannot help it is cut instead: when the pass leaves it whole, when the depth bound is
reached, or when its embeddings are all the same. (The authors' code recurses without a
depth bound and summarises a cluster that another pass did not shrink whole, over the
cap: a cut keeps every summary prompt within it.) A cut orders the members along
their principal axis (node id breaks ties) and packs consecutive runs up to the cap,
so it repeats exactly and keeps neighbours together. One node over the cap alone stays
as it is.

Small and degenerate inputs take fixed paths, never UMAP or the mixture:
no node gives no cluster; up to ``single_cluster_max_nodes`` nodes (RAPTOR's
``reduced_dims + 1``: a full-covariance mixture in ``reduced_dims`` dimensions has
nothing to fit over so few points) form one cluster, as do nodes whose embeddings
are all equal (nothing tells them apart). The UMAP neighbour count is kept between 2
and n - 1, and the mixture's component count below n.

Repeatable: UMAP and the mixture are seeded with ``seed`` (seeding makes UMAP run on
one thread), and the nodes are put in node-id order first, so the same nodes, in any
order, with the same embeddings, tokens and policy give the same clusters.

Speed: above ``UMAP_EXACT_LIMIT`` nodes UMAP gets exact neighbours from
``neighbors.py`` instead of running NN-descent. The BIC search fits ``threads``
mixtures at once, and the local passes of a level's global clusters run ``threads``
at a time; each fit is seeded on its own and results are taken in order, so the
thread count never changes the clusters. BLAS is held to one thread throughout.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hopindex.core.logging import get_logger
from hopindex.methods.sirerag.neighbors import (
    UMAP_EXACT_LIMIT,
    exact_neighbors,
    single_threaded_blas,
)

log = get_logger(__name__)

Cluster = tuple[str, ...]
Indices = npt.NDArray[np.intp]
Matrix = npt.NDArray[np.float32]

# Embeddings closer than this in every coordinate count as the same point.
SAME_POINT_TOLERANCE = 1e-6


@dataclass(frozen=True, slots=True)
class ClusterPolicy:
    """RAPTOR's clustering numbers (SiReRAG uses them unchanged), the authors' token cap."""

    reduced_dims: int = 10  # UMAP output dimensions
    metric: str = "cosine"  # UMAP's input metric
    local_neighbors: int = 10  # UMAP neighbours inside a global cluster
    max_components: int = 50  # the BIC search runs over 1..this many components
    # The search stops once this many component counts in a row failed to beat the
    # best BIC (0: every count, as the authors' code does). The BIC of a mixture in 10
    # dimensions rises steadily past its minimum: over the HotpotQA-100 passages a
    # patience of 5 already chose what the full search chose in every one of the 25
    # searches, and 10 fits half as many mixtures, the largest ones skipped.
    bic_patience: int = 10
    membership_threshold: float = 0.1  # a node joins every cluster it is this likely in
    max_cluster_tokens: int = 10_000  # above it a cluster is clustered again or cut
    max_depth: int = 4  # re-clustering passes below the first before cutting
    single_cluster_max_nodes: int = 11  # this many nodes or fewer: one cluster
    seed: int = 0
    threads: int = 1  # mixtures fitted and local passes run at once; never changes results

    def __post_init__(self) -> None:
        problems = [
            name for name, ok in (
                ("reduced_dims >= 1", self.reduced_dims >= 1),
                ("local_neighbors >= 2", self.local_neighbors >= 2),
                ("max_components >= 1", self.max_components >= 1),
                ("bic_patience >= 0", self.bic_patience >= 0),
                ("0 < membership_threshold < 1", 0 < self.membership_threshold < 1),
                ("max_cluster_tokens >= 1", self.max_cluster_tokens >= 1),
                ("max_depth >= 0", self.max_depth >= 0),
                ("threads >= 1", self.threads >= 1),
                ("single_cluster_max_nodes > reduced_dims",
                 self.single_cluster_max_nodes > self.reduced_dims),
            ) if not ok]
        if problems:
            raise ValueError(f"invalid cluster policy: {', '.join(problems)} does not hold")


DEFAULT_POLICY = ClusterPolicy()


def cluster_nodes(node_ids: Sequence[str], embeddings: npt.ArrayLike,
                  token_counts: Sequence[int],
                  policy: ClusterPolicy = DEFAULT_POLICY) -> list[Cluster]:
    """Soft clusters of the nodes: each a sorted tuple of node ids, none empty, no two
    alike, listed in tuple order (by first member). A node the mixture puts in no
    cluster (``soft_memberships``) is in none of them.

    ``embeddings`` has one row per node (unit-length float32 in practice);
    ``token_counts`` one count per node. Mismatched lengths, repeated ids, negative
    counts or non-finite embeddings raise ``ValueError``: they are the caller's bug.
    """
    started = time.perf_counter()
    vectors = np.asarray(embeddings, dtype=np.float32)
    tokens = np.asarray(token_counts, dtype=np.int64)
    _check_input(node_ids, vectors, tokens)
    if not node_ids:
        return []
    order = sorted(range(len(node_ids)), key=node_ids.__getitem__)
    ids = [node_ids[i] for i in order]
    with single_threaded_blas(), ThreadPoolExecutor(policy.threads) as pool:
        run = _Run(vectors[order], tokens[order], policy, pool)
        groups = run.split(np.arange(len(ids), dtype=np.intp), depth=0)
    clusters = sorted({tuple(ids[i] for i in sorted(group)) for group in groups})
    log.info("sirerag_clustered", nodes=len(ids), clusters=len(clusters),
             passes=run.passes, depth=run.deepest, cut=run.cut,
             duration_s=round(time.perf_counter() - started, 3))
    return clusters


def _check_input(node_ids: Sequence[str], vectors: Matrix,
                 tokens: npt.NDArray[np.int64]) -> None:
    if vectors.ndim != 2 or vectors.shape[0] != len(node_ids):
        raise ValueError(f"embeddings must be one row per node: {len(node_ids)} nodes, "
                         f"embeddings of shape {vectors.shape}")
    if tokens.shape != (len(node_ids),):
        raise ValueError(f"token_counts must be one count per node: {len(node_ids)} "
                         f"nodes, {tokens.size} counts")
    if len(set(node_ids)) != len(node_ids):
        raise ValueError("node ids must be distinct")
    if tokens.size and tokens.min() < 0:
        raise ValueError("token counts must not be negative")
    if not np.isfinite(vectors).all():
        raise ValueError("embeddings must be finite")


@dataclass(slots=True)
class _Run:
    """One ``cluster_nodes`` call: the nodes in id order, and what happened to them."""

    vectors: Matrix
    tokens: npt.NDArray[np.int64]
    policy: ClusterPolicy
    pool: Executor
    passes: int = 0  # clustering passes that ran UMAP and the mixture
    deepest: int = 0
    cut: int = 0  # clusters cut because re-clustering could not split them

    def split(self, members: Indices, depth: int) -> list[Indices]:
        """Clusters of ``members`` (indices into the run), each within the token cap
        unless it is one node or had to be cut."""
        self.deepest = max(self.deepest, depth)
        cap = self.policy.max_cluster_tokens
        out: list[Indices] = []
        for group in self.cluster_once(members):
            if len(group) == 1 or int(self.tokens[group].sum()) <= cap:
                out.append(group)
            elif len(group) < len(members) and depth < self.policy.max_depth:
                # A strict subset: another pass sees a smaller problem, so this ends.
                out.extend(self.split(group, depth + 1))
            else:
                self.cut += 1
                out.extend(self.cut_to_cap(group))
        return out

    def cluster_once(self, members: Indices) -> list[Indices]:
        """One global + local pass over ``members``; the clusters as run indices."""
        points = self.vectors[members]
        policy = self.policy
        if len(members) <= policy.single_cluster_max_nodes or _all_same(points):
            return [members]
        self.passes += 1
        global_neighbors = int(math.sqrt(len(members) - 1))
        global_groups = mixture_clusters(reduce_points(points, global_neighbors, policy),
                                         policy, self.pool)
        out: list[Indices] = []
        # In order of the global groups whatever finishes first: the result repeats.
        for global_group, local in zip(global_groups, self.pool.map(
                lambda group: self.local_clusters(points[group]), global_groups), strict=True):
            out.extend(members[global_group[local_group]] for local_group in local)
        return out

    def local_clusters(self, inner: Matrix) -> list[Indices]:
        """A global cluster's local clusters, as row indices of ``inner``. Runs in the
        pool, so its own mixtures are searched serially (the pool may be full)."""
        policy = self.policy
        if len(inner) <= policy.single_cluster_max_nodes or _all_same(inner):
            return [np.arange(len(inner), dtype=np.intp)]
        return mixture_clusters(reduce_points(inner, policy.local_neighbors, policy), policy)

    def cut_to_cap(self, group: Indices) -> list[Indices]:
        return [group[run] for run in cut_to_cap(self.vectors[group], self.tokens[group],
                                                 self.policy.max_cluster_tokens)]


def reduce_points(points: Matrix, neighbors: int, policy: ClusterPolicy) -> Matrix:
    """UMAP of ``points`` (more than ``reduced_dims + 1`` of them) to ``reduced_dims``
    dimensions, with ``neighbors`` kept between 2 and the points less one."""
    # umap is imported here, not at the top: importing it loads numba, which takes
    # seconds, and most users of the methods package never cluster.
    import umap  # type: ignore[import-untyped]

    n_neighbors = min(max(2, neighbors), len(points) - 1)
    knn: tuple[Any, ...] = (None, None, None)
    if len(points) >= UMAP_EXACT_LIMIT and policy.metric == "cosine":
        knn = (*exact_neighbors(points, n_neighbors), None)
    reducer = umap.UMAP(n_neighbors=n_neighbors, n_components=policy.reduced_dims,
                        metric=policy.metric, random_state=policy.seed, n_jobs=1,
                        precomputed_knn=knn)
    with warnings.catch_warnings():
        # Without a search index UMAP cannot transform new points: never asked of it.
        warnings.filterwarnings("ignore", message=r"precomputed_knn\[2\]")
        return np.asarray(reducer.fit_transform(points), dtype=np.float32)


def mixture_clusters(points: Matrix, policy: ClusterPolicy,
                     pool: Executor | None = None) -> list[Indices]:
    """Soft clusters of ``points`` (at least 2; row indices) by the Gaussian mixture
    with the lowest BIC over 1 to ``max_components`` components, fewer than the points.
    With a ``pool``, ``policy.threads`` component counts are fitted at once."""
    data = np.asarray(points, dtype=np.float64)
    best: Any = None
    best_bic = math.inf
    worse = 0
    for mixture, bic in _fitted(data, policy, pool):
        if bic < best_bic:
            best, best_bic, worse = mixture, bic, 0
        else:
            worse += 1
            if worse == policy.bic_patience:
                break
    if best is None:
        raise ValueError(f"a mixture needs at least 2 points, got {len(data)}")
    return soft_memberships(np.asarray(best.predict_proba(data)), policy.membership_threshold)


def _fitted(data: npt.NDArray[np.float64], policy: ClusterPolicy,
            pool: Executor | None) -> Iterator[tuple[Any, float]]:
    """Mixtures of 1, 2, … components with their BIC, in that order; fitted in waves
    of ``policy.threads`` when there is a pool (a wave may fit past where the search
    stops: the price of fitting at once)."""
    from sklearn.mixture import GaussianMixture  # type: ignore[import-untyped]

    def fit(components: int) -> tuple[Any, float]:
        mixture = GaussianMixture(n_components=components, random_state=policy.seed)
        mixture.fit(data)
        return mixture, float(mixture.bic(data))

    counts = range(1, min(policy.max_components, len(data) - 1) + 1)
    wave = policy.threads if pool is not None else 1
    for start in range(0, len(counts), wave):
        batch = counts[start:start + wave]
        yield from (pool.map(fit, batch) if pool is not None else map(fit, batch))


def soft_memberships(probabilities: npt.NDArray[np.float64], threshold: float) -> list[Indices]:
    """Per component (a column of ``probabilities``, one row per point), the rows that
    join it: those above ``threshold``, and no others. Components nobody joins are
    left out, and so is a row no probability of which passes the threshold.

    No row is forced into its likeliest component: the authors' code (SiReRAG's
    ``base.py`` calls LlamaIndex's RAPTOR pack, ``llama_index/packs/raptor/clustering.py``
    in run-llama/llama_index, ``GMM_cluster``; RAPTOR's own ``raptor/cluster_utils.py``
    in parthsarthi03/raptor is the same) keeps ``np.where(prob > threshold)`` alone.
    A row's largest probability is at least one over the component count, so only a
    mixture of more than ten components (or a row split exactly evenly over ten) can
    leave a row out.
    """
    joined = probabilities > threshold
    return [np.flatnonzero(column).astype(np.intp) for column in joined.T if column.any()]


def cut_to_cap(points: Matrix, tokens: npt.NDArray[np.int64], cap: int) -> list[Indices]:
    """Row indices ordered along the points' principal axis (row order breaks ties),
    in consecutive runs of at most ``cap`` tokens; a row over the cap is a run alone."""
    centred = np.asarray(points, dtype=np.float64)
    centred = centred - centred.mean(axis=0)
    _, _, axes = np.linalg.svd(centred, full_matrices=False)
    # The SVD's sign is arbitrary; fixing it makes the order repeat.
    axis = axes[0] * np.sign(axes[0][np.abs(axes[0]).argmax()])
    # Rounded so that float noise between equal points cannot beat the row order.
    position = np.round(centred @ axis, 6)
    ordered = np.lexsort((np.arange(len(points)), position)).astype(np.intp)
    runs: list[Indices] = []
    start, total = 0, 0
    for offset, row in enumerate(ordered):
        size = int(tokens[row])
        if offset > start and total + size > cap:
            runs.append(ordered[start:offset])
            start, total = offset, 0
        total += size
    runs.append(ordered[start:])
    return runs


def _all_same(points: Matrix) -> bool:
    return bool(np.all(np.abs(points - points[0]) <= SAME_POINT_TOLERANCE))
