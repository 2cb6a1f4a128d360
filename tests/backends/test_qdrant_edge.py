"""The Qdrant Edge adapter against the VectorStore contract, plus what only it promises."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hopindex.backends.protocols import VectorRecord
from hopindex.backends.vector.qdrant_edge import QdrantEdgeVectorStore
from hopindex.core.errors import BackendError, InvalidIndexNameError
from hopindex.testing.contracts.vector_store import (
    DIM,
    VectorStoreContract,
    axis,
    ids,
    record,
    uid,
)


class TestQdrantEdgeVectorStore(VectorStoreContract):
    persistent = True

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[QdrantEdgeVectorStore]:
        store = QdrantEdgeVectorStore(tmp_path / "vectors")
        yield store
        store.close()

    @pytest.fixture
    def reopen_store(self, tmp_path: Path) -> Iterator[Callable[[], QdrantEdgeVectorStore]]:
        opened: list[QdrantEdgeVectorStore] = []

        def reopen() -> QdrantEdgeVectorStore:
            opened.append(QdrantEdgeVectorStore(tmp_path / "vectors"))
            return opened[-1]

        yield reopen
        for store in opened:
            store.close()


def test_reopened_store_checks_dimension_from_disk(tmp_path: Path) -> None:
    """After a restart, a wrong-size vector is refused before the engine sees it."""
    first = QdrantEdgeVectorStore(tmp_path)
    first.ensure_index("idx", DIM)
    first.close()
    second = QdrantEdgeVectorStore(tmp_path)
    try:
        with pytest.raises(BackendError, match=r"index 'idx'.*dimension mismatch"):
            second.upsert_vectors("idx", [record(1, vector=axis(0, dim=DIM + 1))])
        with pytest.raises(BackendError, match="8-dimensional"):
            second.ensure_index("idx", DIM + 1)
    finally:
        second.close()


def test_optimize_keeps_results(tmp_path: Path) -> None:
    """Building the HNSW index changes speed, not answers or counts."""
    store = QdrantEdgeVectorStore(tmp_path)
    try:
        store.ensure_index("idx", DIM)
        store.upsert_vectors("idx", [record(n) for n in range(40)])
        before = ids(store.search_vectors("idx", axis(3), k=5))
        store.optimize_index("idx")
        assert ids(store.search_vectors("idx", axis(3), k=5)) == before
        assert store.count_vectors("idx") == 40
        assert store.optimize_index("missing") is False
    finally:
        store.close()


def test_unsafe_index_name_is_refused(tmp_path: Path) -> None:
    """Index names become directories, so a path-like name never touches the disk."""
    store = QdrantEdgeVectorStore(tmp_path / "vectors")
    with pytest.raises(InvalidIndexNameError):
        store.ensure_index("../escape", DIM)
    assert not (tmp_path / "escape").exists()


def test_non_uuid_unit_id_is_a_backend_error(tmp_path: Path) -> None:
    """Engine rejections surface as BackendError naming the index."""
    store = QdrantEdgeVectorStore(tmp_path)
    try:
        store.ensure_index("idx", DIM)
        good = record(1)
        bad = VectorRecord(unit_id="not-a-uuid", vector=good.vector, payload=good.payload)
        with pytest.raises(BackendError, match="'idx'"):
            store.upsert_vectors("idx", [good, bad])
        assert uid(1) not in ids(store.search_vectors("idx", axis(1), k=5))
    finally:
        store.close()
