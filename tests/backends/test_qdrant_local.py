"""The Qdrant server adapter against the ``VectorStore`` contract on qdrant-client's
in-process local mode, on every run (no Qdrant server needed).

The adapter takes its ``AsyncQdrantClient`` from a factory; here the factory builds
``AsyncQdrantClient(location=":memory:")`` (``path=`` for the on-disk class), which
implements Qdrant's collection and points API in process: upsert, delete by ids and
by filter, nearest-neighbour query with must / match-any filters, count, retrieve,
missing collections. The contract's semantics are thus held against Qdrant's own,
where test_qdrant_server.py holds the adapter's requests against the REST API.

What local mode cannot show, and the request-shape test (test_qdrant_server.py) that
covers each instead:

- ``shard_number`` / ``replication_factor``: local mode accepts and ignores them
  (test_ensure_index_creates_collection_and_payload_indexes,
  test_server_defaults_leave_shards_to_qdrant);
- keyword payload indexes: local mode accepts ``create_payload_index`` but builds
  none and always reports an empty ``payload_schema``, so here ``ensure_index`` asks
  for them on every call (test_ensure_index_creates_collection_and_payload_indexes,
  test_ensure_existing_collection_checks_its_dimension);
- ``wait=true`` on writes and write ordering: local mode applies each write before
  returning (test_upsert_sends_points_with_named_vector_and_payload_and_waits,
  test_deletes_by_ids_and_by_filter);
- the 256-point upsert batches as separate requests (local mode takes any size; the
  600-point case below checks only that every point lands);
- ``exact=true`` counts and HNSW approximation: local mode counts exactly and
  searches by brute force (test_count_and_get_vectors);
- the API-key header, 401/403 as ``ConfigError``, 408/429/5xx and refused connections
  as ``BackendUnavailableError``, gRPC, the request timeout and the URL path prefix:
  there is no network (test_api_key_header_and_refused_key,
  test_overload_is_retryable_and_unreachable_too,
  test_config_from_url_query_and_settings,
  test_grpc_client_can_be_built_without_a_server);
- 409 when another process creates the collection first
  (test_create_race_with_another_process_is_fine).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from qdrant_client import AsyncQdrantClient

from hopindex.backends.protocols import UnitFilter, VectorStore
from hopindex.backends.vector.qdrant_server import QdrantServerConfig, QdrantServerVectorStore
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import UnitKind
from hopindex.testing.contracts.vector_store import VectorStoreContract, axis, ids, record, uid

# Local mode warns once that its payload indexes do nothing (listed above).
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect")

# The host is never contacted: the factory's client is in process. The prefix is the
# production default, so collection names are the ones a server would hold.
CONFIG = QdrantServerConfig(host="in-process")


def in_memory() -> AsyncQdrantClient:
    return AsyncQdrantClient(location=":memory:")


class LocalModeContract(VectorStoreContract):
    """The unchanged contract plus the adapter's own promises, on the in-process client
    ``connect`` builds (collected through the two classes below)."""

    def connect(self, tmp_path: Path) -> Callable[[], AsyncQdrantClient]:
        raise NotImplementedError("each local-mode class names its client")

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[QdrantServerVectorStore]:
        store = QdrantServerVectorStore(CONFIG, connect=self.connect(tmp_path))
        yield store
        store.close()

    def test_delete_matching_removes_exactly_what_the_filter_selects(
            self, store: QdrantServerVectorStore, filled: str) -> None:
        """delete_matching (the adapter's own, beyond the protocol) removes the points
        the filter selects (fields AND, values OR) and nothing else; an index never
        created is nothing to delete; an empty filter is refused."""
        store.delete_matching(filled, UnitFilter(kinds=(UnitKind.PASSAGE, UnitKind.BRIDGE),
                                                 entities=("france",)))
        assert sorted(ids(store.search_vectors(filled, axis(0), k=10))) == sorted(
            [uid(1), uid(3), uid(4)])
        store.delete_matching(filled, UnitFilter(source_doc_ids=("d3", "d4")))
        assert ids(store.search_vectors(filled, axis(0), k=10)) == [uid(1)]
        store.delete_matching("ct-never-made", UnitFilter(kinds=(UnitKind.AKU,)))
        with pytest.raises(InvalidInputError, match="drop_index"):
            store.delete_matching(filled, UnitFilter())
        assert store.count_vectors(filled) == 1

    def test_more_points_than_one_request_all_land(self, store: QdrantServerVectorStore,
                                                   index: str) -> None:
        """600 points, sent as several upsert batches, are all stored and readable."""
        store.upsert_vectors(index, [record(n) for n in range(600)])
        assert store.count_vectors(index) == 600
        got = store.get_vectors(index, [uid(599), uid(0), uid(300)])
        assert [r.unit_id for r in got] == [uid(599), uid(0), uid(300)]


class TestQdrantServerOnLocalMemory(LocalModeContract):
    """On ``location=":memory:"``, as a CI run without a server allows."""

    def connect(self, tmp_path: Path) -> Callable[[], AsyncQdrantClient]:
        return in_memory

    def test_persistence_across_reopen(self, store: VectorStore, filled: str,
                                       request: pytest.FixtureRequest) -> None:
        """Not here: a ``:memory:`` client keeps its points only until ``close`` drops
        it; the on-disk class runs this case."""
        pytest.skip("location=':memory:' forgets every point on close; "
                    "TestQdrantServerOnLocalDisk runs the reopen case")


class TestQdrantServerOnLocalDisk(LocalModeContract):
    """The same on ``path=`` (local mode's on-disk storage), so a second adapter opened
    after ``close`` must find the collections, points and payloads of the first."""

    persistent: ClassVar[bool] = True

    def connect(self, tmp_path: Path) -> Callable[[], AsyncQdrantClient]:
        return lambda: AsyncQdrantClient(path=str(tmp_path / "qdrant"))

    @pytest.fixture
    def reopen_store(self, tmp_path: Path) -> Iterator[Callable[[], QdrantServerVectorStore]]:
        opened: list[QdrantServerVectorStore] = []

        def reopen() -> QdrantServerVectorStore:
            opened.append(QdrantServerVectorStore(CONFIG, connect=self.connect(tmp_path)))
            return opened[-1]

        yield reopen
        for store in opened:
            store.close()
