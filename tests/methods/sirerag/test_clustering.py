"""SiReRAG's clustering step: repeatable, covering, within the token cap, and safe on
small, degenerate and unsplittable inputs.

The tests that run UMAP pay numba's compilation once per process (about ten seconds
here); the rest replace the reduction or the mixture with stand-ins so that the
recursion and the fixed paths are checked exactly and fast.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import numpy.typing as npt
import pytest

from hopindex.methods.sirerag import clustering
from hopindex.methods.sirerag.clustering import (
    Cluster,
    ClusterPolicy,
    cluster_nodes,
    cut_to_cap,
    mixture_clusters,
    soft_memberships,
)

Matrix = npt.NDArray[np.float32]
# Few components keep the BIC search short where the default count is not the point.
QUICK = ClusterPolicy(max_components=8)


def unit_rows(x: npt.NDArray[np.float64]) -> Matrix:
    return np.asarray(x / np.linalg.norm(x, axis=1, keepdims=True), dtype=np.float32)


def blobs(groups: int, per_group: int, *, seed: int = 0, dim: int = 32,
          spread: float = 0.2) -> Matrix:
    """Unit vectors in ``groups`` tight groups around random centres."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(groups, dim))
    return unit_rows(np.concatenate(
        [c + spread * rng.normal(size=(per_group, dim)) for c in centres]))


def names(n: int) -> list[str]:
    return [f"n{i:03d}" for i in range(n)]


def assert_well_formed(clusters: list[Cluster], ids: Sequence[str]) -> None:
    assert all(clusters), "no empty cluster"
    assert all(list(c) == sorted(c) for c in clusters), "members sorted"
    assert clusters == sorted(set(clusters)), "distinct, in tuple order"
    assert {i for c in clusters for i in c} == set(ids), "every node, nothing else"


def forbid(monkeypatch: pytest.MonkeyPatch, *functions: str) -> None:
    def refuse(*_: object) -> None:
        raise AssertionError("this input must not reach UMAP or the mixture")
    for name in functions:
        monkeypatch.setattr(clustering, name, refuse)


def halves(points: Matrix, policy: ClusterPolicy,
           pool: object = None) -> list[npt.NDArray[np.intp]]:
    """Stand-in mixture: the first half of the rows and the rest."""
    middle = len(points) // 2
    return [np.arange(middle), np.arange(middle, len(points))]


def passthrough(points: Matrix, neighbors: int, policy: ClusterPolicy) -> Matrix:
    return points


# UMAP and the mixture for real.

def test_same_input_and_seed_give_the_same_clusters() -> None:
    """Two runs agree exactly, and so does a run over the same nodes in another order."""
    vectors = blobs(3, 14)
    ids = names(len(vectors))
    tokens = [50] * len(ids)
    first = cluster_nodes(ids, vectors, tokens, QUICK)
    assert_well_formed(first, ids)
    assert len(first) > 1
    assert cluster_nodes(ids, vectors, tokens, QUICK) == first
    order = np.random.default_rng(1).permutation(len(ids))
    assert cluster_nodes([ids[i] for i in order], vectors[order],
                         [tokens[i] for i in order], QUICK) == first


def test_the_thread_count_never_changes_the_clusters() -> None:
    """Fitting mixtures and running local passes three at a time gives what one at a
    time gives, patience stops included (a wave fits past the stop and is discarded)."""
    vectors = blobs(4, 15, seed=3)
    ids = names(len(vectors))
    tokens = [50] * len(ids)
    serial = cluster_nodes(ids, vectors, tokens, ClusterPolicy(max_components=12,
                                                               bic_patience=2))
    threaded = cluster_nodes(ids, vectors, tokens, ClusterPolicy(max_components=12,
                                                                 bic_patience=2, threads=3))
    assert threaded == serial
    assert len(serial) > 1


def test_large_inputs_get_exact_neighbours(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above the exact-neighbour limit UMAP is handed exact cosine neighbours for each
    pass (the square root of n - 1 globally, 10 locally); the clusters repeat and
    never mix two groups."""
    from hopindex.methods.sirerag import neighbors

    handed: list[tuple[int, int]] = []

    def spy(rows: Matrix, k: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        handed.append((len(rows), k))
        return neighbors.exact_neighbors(rows, k)

    monkeypatch.setattr(clustering, "UMAP_EXACT_LIMIT", 12)
    monkeypatch.setattr(clustering, "exact_neighbors", spy)
    vectors = blobs(3, 20, seed=5, spread=0.05)
    ids = names(len(vectors))
    clusters = cluster_nodes(ids, vectors, [50] * len(ids), QUICK)
    assert handed[0] == (60, 7)
    assert all(k == 10 for _, k in handed[1:])
    assert_well_formed(clusters, ids)
    assert all(len({int(i[1:]) // 20 for i in c}) == 1 for c in clusters)
    assert cluster_nodes(ids, vectors, [50] * len(ids), QUICK) == clusters


def test_clusters_stay_within_the_token_cap() -> None:
    """Every cluster is within the cap but those of a single node, and a node over the
    cap by itself is only ever alone."""
    vectors = blobs(3, 20, seed=2)
    ids = names(len(vectors))
    rng = np.random.default_rng(3)
    tokens = [int(t) for t in rng.integers(40, 160, size=len(ids))]
    tokens[7] = 900
    policy = ClusterPolicy(max_components=8, max_cluster_tokens=400)
    clusters = cluster_nodes(ids, vectors, tokens, policy)
    assert_well_formed(clusters, ids)
    size = dict(zip(ids, tokens, strict=True))
    for cluster in clusters:
        assert len(cluster) == 1 or sum(size[i] for i in cluster) <= 400
    assert all(c == (ids[7],) for c in clusters if ids[7] in c)


def test_twelve_nodes_take_the_umap_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The smallest input that is reduced: UMAP runs with int(sqrt(11)) = 3 neighbours
    and the result covers every node."""
    seen: list[tuple[int, int]] = []
    real = clustering.reduce_points

    def spy(points: Matrix, neighbors: int, policy: ClusterPolicy) -> Matrix:
        seen.append((len(points), neighbors))
        return real(points, neighbors, policy)

    monkeypatch.setattr(clustering, "reduce_points", spy)
    vectors = blobs(2, 6, seed=4)
    ids = names(12)
    assert_well_formed(cluster_nodes(ids, vectors, [10] * 12, QUICK), ids)
    assert seen[0] == (12, 3)


def test_a_midpoint_joins_both_mixture_components() -> None:
    """Soft assignment in the mixture itself: the point halfway between two mirrored
    groups is over 0.1 likely in both, so it is in both clusters."""
    rng = np.random.default_rng(0)
    group = rng.normal(scale=0.7, size=(40, 2))
    shift = np.array([2.0, 0.0])
    points = np.concatenate([group + shift, -group - shift, np.zeros((1, 2))])
    clusters = mixture_clusters(points.astype(np.float32), QUICK)
    assert len(clusters) == 2
    assert all(80 in c for c in clusters)


def test_the_patient_bic_search_chooses_what_the_full_search_chooses() -> None:
    """Stopping ten component counts past the best BIC picks the same mixture as trying
    every count, on five groups of points reduced as UMAP would."""
    points = blobs(5, 30, dim=10, spread=0.3)
    full = mixture_clusters(points, ClusterPolicy(bic_patience=0))
    patient = mixture_clusters(points, ClusterPolicy(bic_patience=10))
    assert [list(c) for c in patient] == [list(c) for c in full]
    assert len(full) == 5


# The rules, with stand-ins for UMAP or the mixture.

def test_a_node_likely_in_two_components_joins_both() -> None:
    """Memberships above 0.1 are all kept; a component nobody joins is left out; a node
    below 0.1 everywhere joins nothing: it is not forced into its likeliest component,
    as the authors' code (the LlamaIndex RAPTOR pack's ``GMM_cluster``) does not."""
    probabilities = np.array([
        [0.55, 0.45, 0.0, 0.0],
        [0.95, 0.05, 0.0, 0.0],
        [0.0, 0.3, 0.0, 0.7],
    ])
    assert [list(c) for c in soft_memberships(probabilities, 0.1)] == [[0, 1], [0, 2], [2]]
    flat = np.full((1, 20), 0.05)
    flat[0, 4] = 0.06
    assert soft_memberships(flat, 0.1) == []
    spread = np.vstack([np.eye(12)[0], np.full(12, 1 / 12)])
    assert [list(c) for c in soft_memberships(spread, 0.1)] == [[0]]


class _SpreadMixture:
    """A fitted mixture of twelve components: a point's first coordinate says where it
    lies, 0 and 1 wholly in components 0 and 1, 2 spread evenly over all twelve."""

    def predict_proba(self, data: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        rows = np.full((len(data), 12), 1 / 12)
        for row, group in enumerate(data[:, 0].round().astype(int)):
            if group < 2:
                rows[row] = np.eye(12)[group]
        return rows


def test_a_node_no_cluster_is_likely_for_is_in_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through ``cluster_nodes``: the node the mixture spreads over twelve components
    (1/12 each, under 0.1) is in no cluster; the others form their two. It stays a leaf
    with no summary above it, as in the authors' code."""
    def fitted(data: npt.NDArray[np.float64], policy: ClusterPolicy,
               pool: object) -> Iterator[tuple[_SpreadMixture, float]]:
        yield _SpreadMixture(), 0.0

    monkeypatch.setattr(clustering, "reduce_points", passthrough)
    monkeypatch.setattr(clustering, "_fitted", fitted)
    groups = [0] * 12 + [1] * 12 + [2]
    vectors = np.array([[g, 0.01 * i, 1.0] for i, g in enumerate(groups)], dtype=np.float32)
    ids = names(len(groups))
    clusters = cluster_nodes(ids, vectors, [1] * len(ids))
    assert clusters == [tuple(ids[:12]), tuple(ids[12:24])]
    assert ids[24] not in {i for c in clusters for i in c}


def test_soft_memberships_reach_the_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    """A node the mixture puts in two clusters is in two clusters of the result."""
    def overlapping(points: Matrix, policy: ClusterPolicy,
                    pool: object = None) -> list[npt.NDArray[np.intp]]:
        middle = len(points) // 2
        return [np.arange(middle + 1), np.arange(middle, len(points))]

    monkeypatch.setattr(clustering, "reduce_points", passthrough)
    monkeypatch.setattr(clustering, "mixture_clusters", overlapping)
    ids = names(20)
    clusters = cluster_nodes(ids, blobs(1, 20), [1] * 20)
    assert_well_formed(clusters, ids)
    counts = Counter(i for c in clusters for i in c)
    assert counts["n010"] == 2


def test_over_cap_clusters_are_clustered_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """48 nodes of 10 tokens, cap 100: the 12-node local clusters are over the cap and
    clustered again into 6-node halves; nothing is cut."""
    monkeypatch.setattr(clustering, "reduce_points", passthrough)
    monkeypatch.setattr(clustering, "mixture_clusters", halves)
    ids = names(48)
    policy = ClusterPolicy(max_cluster_tokens=100)
    clusters = cluster_nodes(ids, blobs(2, 24), [10] * 48, policy)
    assert_well_formed(clusters, ids)
    assert [len(c) for c in clusters] == [6] * 8


def test_the_depth_bound_cuts_instead(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no re-clustering allowed the same 12-node clusters are cut to the cap:
    runs of 10 and 2 nodes."""
    monkeypatch.setattr(clustering, "reduce_points", passthrough)
    monkeypatch.setattr(clustering, "mixture_clusters", halves)
    ids = names(48)
    policy = ClusterPolicy(max_cluster_tokens=100, max_depth=0)
    clusters = cluster_nodes(ids, blobs(2, 24), [10] * 48, policy)
    assert_well_formed(clusters, ids)
    assert sorted(len(c) for c in clusters) == [2] * 4 + [10] * 4


def test_a_cluster_that_does_not_split_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """A mixture that keeps every node together cannot help: the cluster is cut into
    runs within the cap, and the run ends."""
    def whole(points: Matrix, policy: ClusterPolicy,
              pool: object = None) -> list[npt.NDArray[np.intp]]:
        return [np.arange(len(points))]

    monkeypatch.setattr(clustering, "reduce_points", passthrough)
    monkeypatch.setattr(clustering, "mixture_clusters", whole)
    ids = names(48)
    clusters = cluster_nodes(ids, blobs(3, 16), [10] * 48,
                             ClusterPolicy(max_cluster_tokens=100))
    assert_well_formed(clusters, ids)
    assert sorted(len(c) for c in clusters) == [8, 10, 10, 10, 10]


def test_a_cut_follows_the_principal_axis() -> None:
    """Points on a line are cut into consecutive runs along it; a point over the cap
    is a run alone; equal points keep their row order."""
    along = np.array([5.0, 1.0, 4.0, 2.0, 3.0, 0.0])
    points = np.stack([along, np.zeros(6)], axis=1).astype(np.float32)
    runs = cut_to_cap(points, np.array([1, 1, 1, 9, 1, 1]), cap=2)
    assert [list(r) for r in runs] == [[5, 1], [3], [4, 2], [0]]
    same = np.ones((5, 3), dtype=np.float32)
    assert [list(r) for r in cut_to_cap(same, np.array([1] * 5), cap=2)] == [
        [0, 1], [2, 3], [4]]


# Small and degenerate inputs: fixed paths.

def test_no_nodes_no_clusters_one_node_one_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """Zero nodes give no cluster and one node its own, without UMAP or the mixture."""
    forbid(monkeypatch, "reduce_points", "mixture_clusters")
    assert cluster_nodes([], np.zeros((0, 8), dtype=np.float32), []) == []
    assert cluster_nodes(["a"], blobs(1, 1), [20_000]) == [("a",)]


def test_eleven_nodes_form_one_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to 11 nodes are one cluster, however they spread, without UMAP."""
    forbid(monkeypatch, "reduce_points", "mixture_clusters")
    vectors = unit_rows(np.random.default_rng(5).normal(size=(11, 16)))
    ids = [f"x{i}" for i in reversed(range(11))]
    assert cluster_nodes(ids, vectors, [5] * 11) == [tuple(sorted(ids))]


def test_identical_embeddings_form_one_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nodes nothing tells apart are one cluster, without UMAP."""
    forbid(monkeypatch, "reduce_points", "mixture_clusters")
    ids = names(30)
    vectors = np.repeat(blobs(1, 1), 30, axis=0)
    assert cluster_nodes(ids, vectors, [10] * 30) == [tuple(ids)]


def test_identical_embeddings_with_a_tiny_cap_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recursion guard: identical nodes over the cap are cut into id-ordered runs
    within it, and with a cap below every node, into single nodes."""
    forbid(monkeypatch, "reduce_points", "mixture_clusters")
    ids = names(30)
    vectors = np.repeat(blobs(1, 1), 30, axis=0)
    pairs = cluster_nodes(ids, vectors, [10] * 30, ClusterPolicy(max_cluster_tokens=25))
    assert pairs == [(ids[i], ids[i + 1]) for i in range(0, 30, 2)]
    singles = cluster_nodes(ids, vectors, [10] * 30, ClusterPolicy(max_cluster_tokens=1))
    assert singles == [(i,) for i in ids]


@pytest.mark.parametrize(("call", "message"), [
    (lambda: cluster_nodes(["a", "b"], np.zeros((3, 4)), [1, 1]), "one row per node"),
    (lambda: cluster_nodes(["a", "b"], np.zeros((2, 4)), [1]), "one count per node"),
    (lambda: cluster_nodes(["a", "a"], np.zeros((2, 4)), [1, 1]), "distinct"),
    (lambda: cluster_nodes(["a", "b"], np.zeros((2, 4)), [1, -1]), "negative"),
    (lambda: cluster_nodes(["a"], np.full((1, 4), np.nan), [1]), "finite"),
    (lambda: ClusterPolicy(single_cluster_max_nodes=10), "single_cluster_max_nodes"),
    (lambda: ClusterPolicy(membership_threshold=1.0), "membership_threshold"),
])
def test_malformed_input_is_refused(call: Callable[[], object], message: str) -> None:
    """Inputs that break the contract raise ValueError naming what is wrong."""
    with pytest.raises(ValueError, match=message):
        call()
