"""The ``VectorStore`` contract: what every dense vector adapter must do, embedded or server."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import ClassVar

import numpy as np
import pytest

from hopindex.backends.protocols import UnitFilter, UnitPayload, Vector, VectorRecord, VectorStore
from hopindex.core.errors import BackendError, NotFoundError
from hopindex.core.models import Hit, UnitKind

DIM = 8


def uid(n: int) -> str:
    """A stable uuid string per small integer, as real unit ids are uuid strings."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"hopindex-contract-{n}"))


def axis(i: int, noise_seed: int | None = None, dim: int = DIM) -> Vector:
    """Unit vector along axis ``i`` (optionally nudged by seeded noise): nearest is obvious."""
    vector = np.zeros(dim, dtype=np.float32)
    vector[i % dim] = 1.0
    if noise_seed is not None:
        vector += np.random.default_rng(noise_seed).normal(0.0, 0.05, dim).astype(np.float32)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def record(n: int, *, kind: UnitKind = UnitKind.PASSAGE, docs: tuple[str, ...] = ("d0",),
           entities: tuple[str, ...] = (), vector: Vector | None = None) -> VectorRecord:
    return VectorRecord(unit_id=uid(n), vector=axis(n, noise_seed=n) if vector is None else vector,
                        payload=UnitPayload(kind=kind, source_doc_ids=docs, entities=entities))


def ids(hits: list[Hit]) -> list[str]:
    return [hit.unit_id for hit in hits]


class VectorStoreContract:
    """Subclass with a ``store`` fixture; set ``persistent = True`` and add ``reopen_store``
    when a second instance over the same location must see the data."""

    persistent: ClassVar[bool] = False

    @pytest.fixture
    def store(self) -> Iterator[VectorStore]:
        raise NotImplementedError("the adapter's test class provides the store fixture")

    @pytest.fixture
    def reopen_store(self) -> Callable[[], VectorStore]:
        raise NotImplementedError("persistent adapters provide the reopen_store fixture")

    @pytest.fixture
    def index(self, store: VectorStore) -> Iterator[str]:
        name = f"ct-{uuid.uuid4().hex[:12]}"
        store.ensure_index(name, DIM)
        yield name
        store.drop_index(name)

    @pytest.fixture
    def filled(self, store: VectorStore, index: str) -> str:
        store.upsert_vectors(index, [
            record(0, kind=UnitKind.PASSAGE, docs=("d1",), entities=("paris", "france")),
            record(1, kind=UnitKind.AKU, docs=("d1", "d2"), entities=("paris",)),
            record(2, kind=UnitKind.BRIDGE, docs=("d2", "d3"), entities=("berlin", "france")),
            record(3, kind=UnitKind.PASSAGE, docs=("d3",), entities=("berlin",)),
            record(4, kind=UnitKind.AKU, docs=("d4",)),
        ])
        return index

    def test_satisfies_protocol(self, store: VectorStore) -> None:
        """The adapter is a structural ``VectorStore``."""
        assert isinstance(store, VectorStore)

    def test_search_returns_nearest_first_with_scores(self, store: VectorStore,
                                                      filled: str) -> None:
        """The closest vector comes first, scores are cosine-like and never increase."""
        hits = store.search_vectors(filled, axis(2), k=3)
        assert ids(hits)[0] == uid(2)
        assert len(hits) == 3
        assert hits[0].score == pytest.approx(float(np.dot(axis(2), axis(2, 2))), abs=1e-3)
        scores = [hit.score for hit in hits]
        assert scores == sorted(scores, reverse=True)

    def test_k_bounds_results(self, store: VectorStore, filled: str) -> None:
        """k caps the hit count; k above the size returns everything; k = 0 returns nothing."""
        assert len(store.search_vectors(filled, axis(0), k=2)) == 2
        assert sorted(ids(store.search_vectors(filled, axis(0), k=50))) == sorted(
            uid(n) for n in range(5))
        assert store.search_vectors(filled, axis(0), k=0) == []

    def test_upsert_same_id_twice_keeps_one_point(self, store: VectorStore, index: str) -> None:
        """Upserting an existing id replaces the point (vector and payload), never duplicates."""
        store.upsert_vectors(index, [record(7, vector=axis(0), entities=("old",))])
        store.upsert_vectors(index, [record(7, vector=axis(5), entities=("new",))])
        assert store.count_vectors(index) == 1
        hits = store.search_vectors(index, axis(5), k=5)
        assert ids(hits) == [uid(7)]
        assert hits[0].score == pytest.approx(1.0, abs=1e-3)
        assert store.search_vectors(index, axis(5), k=5,
                                    unit_filter=UnitFilter(entities=("old",))) == []

    def test_duplicate_ids_within_one_batch_keep_one_point(self, store: VectorStore,
                                                           index: str) -> None:
        """A batch that repeats an id stores it once."""
        store.upsert_vectors(index, [record(7, vector=axis(0)), record(7, vector=axis(1))])
        assert store.count_vectors(index) == 1

    def test_empty_upsert_and_delete_are_no_ops(self, store: VectorStore, filled: str) -> None:
        """Empty batches change nothing and do not fail."""
        store.upsert_vectors(filled, [])
        store.delete_vectors(filled, [])
        assert store.count_vectors(filled) == 5

    def test_delete_removes_points(self, store: VectorStore, filled: str) -> None:
        """Deleted ids disappear from search and count; unknown ids are ignored."""
        store.delete_vectors(filled, [uid(2), uid(3), uid(99)])
        assert store.count_vectors(filled) == 3
        found = ids(store.search_vectors(filled, axis(2), k=10))
        assert uid(2) not in found
        assert uid(3) not in found

    def test_filter_by_kind(self, store: VectorStore, filled: str) -> None:
        """A kinds filter returns only units of those kinds."""
        hits = store.search_vectors(filled, axis(0), k=10,
                                    unit_filter=UnitFilter(kinds=(UnitKind.AKU,)))
        assert sorted(ids(hits)) == sorted([uid(1), uid(4)])
        hits = store.search_vectors(filled, axis(0), k=10, unit_filter=UnitFilter(
            kinds=(UnitKind.BRIDGE, UnitKind.PASSAGE)))
        assert sorted(ids(hits)) == sorted([uid(0), uid(2), uid(3)])

    def test_filter_by_source_doc_ids(self, store: VectorStore, filled: str) -> None:
        """A source filter matches units citing any of the given documents."""
        hits = store.search_vectors(filled, axis(0), k=10,
                                    unit_filter=UnitFilter(source_doc_ids=("d2",)))
        assert sorted(ids(hits)) == sorted([uid(1), uid(2)])
        hits = store.search_vectors(filled, axis(0), k=10,
                                    unit_filter=UnitFilter(source_doc_ids=("d1", "d4")))
        assert sorted(ids(hits)) == sorted([uid(0), uid(1), uid(4)])

    def test_filter_by_entities(self, store: VectorStore, filled: str) -> None:
        """An entities filter matches units mentioning any of the given entities."""
        hits = store.search_vectors(filled, axis(0), k=10,
                                    unit_filter=UnitFilter(entities=("france",)))
        assert sorted(ids(hits)) == sorted([uid(0), uid(2)])
        hits = store.search_vectors(filled, axis(0), k=10,
                                    unit_filter=UnitFilter(entities=("nowhere",)))
        assert hits == []

    def test_filter_fields_all_must_match(self, store: VectorStore, filled: str) -> None:
        """Non-empty filter fields combine with AND; values within a field with OR."""
        hits = store.search_vectors(filled, axis(0), k=10, unit_filter=UnitFilter(
            kinds=(UnitKind.PASSAGE, UnitKind.BRIDGE), entities=("berlin",),
            source_doc_ids=("d3",)))
        assert sorted(ids(hits)) == sorted([uid(2), uid(3)])
        hits = store.search_vectors(filled, axis(0), k=10, unit_filter=UnitFilter(
            kinds=(UnitKind.AKU,), entities=("berlin",)))
        assert hits == []

    def test_empty_filter_matches_everything(self, store: VectorStore, filled: str) -> None:
        """An all-empty UnitFilter is no restriction."""
        assert len(store.search_vectors(filled, axis(0), k=10, unit_filter=UnitFilter())) == 5

    def test_count(self, store: VectorStore, index: str) -> None:
        """count_vectors reports the number of stored points."""
        assert store.count_vectors(index) == 0
        store.upsert_vectors(index, [record(n) for n in range(6)])
        assert store.count_vectors(index) == 6

    def test_get_vectors_reads_points_back(self, store: VectorStore, filled: str) -> None:
        """Stored vectors and payloads come back in the order asked; unknown ids are left out."""
        got = store.get_vectors(filled, [uid(2), uid(99), uid(0), uid(2)])
        assert [r.unit_id for r in got] == [uid(2), uid(0)]
        expected = {r.unit_id: r for r in (record(2, kind=UnitKind.BRIDGE, docs=("d2", "d3"),
                                                  entities=("berlin", "france")),
                                           record(0, kind=UnitKind.PASSAGE, docs=("d1",),
                                                  entities=("paris", "france")))}
        for found in got:
            want = expected[found.unit_id]
            assert found.vector.dtype == np.float32
            # Cosine stores may keep vectors normalised; these are unit length already.
            np.testing.assert_allclose(found.vector, want.vector, atol=1e-5)
            assert found.payload == want.payload
        assert store.get_vectors(filled, []) == []

    def test_get_vectors_round_trips_into_another_index(self, store: VectorStore,
                                                        filled: str) -> None:
        """What get_vectors returns can be upserted elsewhere and searches the same."""
        other = f"ct-{uuid.uuid4().hex[:12]}"
        store.ensure_index(other, DIM)
        try:
            store.upsert_vectors(other, store.get_vectors(filled, [uid(n) for n in range(5)]))
            assert store.count_vectors(other) == 5
            for n in range(5):
                assert ids(store.search_vectors(other, axis(n), k=5)) == ids(
                    store.search_vectors(filled, axis(n), k=5))
        finally:
            store.drop_index(other)

    def test_unknown_index_is_empty(self, store: VectorStore) -> None:
        """An index never created searches, counts and deletes as empty, without failing."""
        name = f"ct-missing-{uuid.uuid4().hex[:8]}"
        assert store.count_vectors(name) == 0
        assert store.search_vectors(name, axis(0), k=5) == []
        store.delete_vectors(name, [uid(1)])
        assert store.get_vectors(name, [uid(1)]) == []
        store.drop_index(name)
        assert store.count_vectors(name) == 0

    def test_upsert_into_unknown_index_raises_not_found(self, store: VectorStore) -> None:
        """Writing to an index never ensured is an error naming it, not a silent create."""
        name = f"ct-missing-{uuid.uuid4().hex[:8]}"
        with pytest.raises(NotFoundError, match=name):
            store.upsert_vectors(name, [record(1)])

    def test_ensure_index_is_idempotent(self, store: VectorStore, filled: str) -> None:
        """Ensuring an existing index keeps its points."""
        store.ensure_index(filled, DIM)
        store.ensure_index(filled, DIM)
        assert store.count_vectors(filled) == 5

    def test_indexes_are_isolated(self, store: VectorStore, filled: str) -> None:
        """Points written to one index never show up in another."""
        other = f"ct-{uuid.uuid4().hex[:12]}"
        store.ensure_index(other, DIM)
        try:
            assert store.count_vectors(other) == 0
            assert store.search_vectors(other, axis(0), k=5) == []
        finally:
            store.drop_index(other)

    def test_drop_index(self, store: VectorStore, filled: str) -> None:
        """Dropping removes every point; ensuring again starts empty."""
        store.drop_index(filled)
        assert store.count_vectors(filled) == 0
        assert store.search_vectors(filled, axis(0), k=5) == []
        store.ensure_index(filled, DIM)
        assert store.count_vectors(filled) == 0

    def test_dimension_mismatch_on_upsert_raises(self, store: VectorStore, index: str) -> None:
        """A vector of the wrong size is a BackendError naming the index and the dimension."""
        bad = record(1, vector=axis(0, dim=DIM + 3))
        with pytest.raises(BackendError, match=r"(?i)dimension") as caught:
            store.upsert_vectors(index, [record(2), bad])
        assert index in str(caught.value)
        assert store.count_vectors(index) == 0

    def test_dimension_mismatch_on_search_raises(self, store: VectorStore, filled: str) -> None:
        """A query vector of the wrong size is a BackendError, not an engine crash."""
        with pytest.raises(BackendError, match=r"(?i)dimension"):
            store.search_vectors(filled, axis(0, dim=DIM - 2), k=3)

    def test_ensure_index_with_other_dimension_raises(self, store: VectorStore,
                                                      index: str) -> None:
        """Reusing an index for vectors of another size is refused with a clear error."""
        with pytest.raises(BackendError, match=r"(?i)dimension|dimensional"):
            store.ensure_index(index, DIM * 2)

    def test_persistence_across_reopen(self, store: VectorStore, filled: str,
                                       request: pytest.FixtureRequest) -> None:
        """A new instance over the same location sees the points, filters and all."""
        if not self.persistent:
            pytest.skip("adapter declares no persistence")
        reopen_store: Callable[[], VectorStore] = request.getfixturevalue("reopen_store")
        store.close()
        reopened = reopen_store()
        assert reopened.count_vectors(filled) == 5
        assert ids(reopened.search_vectors(filled, axis(3), k=1)) == [uid(3)]
        hits = reopened.search_vectors(filled, axis(0), k=10,
                                       unit_filter=UnitFilter(entities=("france",)))
        assert sorted(ids(hits)) == sorted([uid(0), uid(2)])
        reopened.ensure_index(filled, DIM)
        reopened.upsert_vectors(filled, [record(9)])
        assert reopened.count_vectors(filled) == 6
        reopened.drop_index(filled)
