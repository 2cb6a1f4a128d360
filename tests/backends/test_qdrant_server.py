"""The Qdrant server vector adapter: the exact requests it sends, and the contract suite
against a real server when ``HOPINDEX_TEST_QDRANT_URL`` names one (test_qdrant_local.py
runs the contract on every run, on qdrant-client's in-process mode, and lists what
only these request-shape tests show).

The request-shape tests run ``AsyncQdrantClient`` over REST (its default) against a
loopback HTTP server that records each request and answers with bodies of the
shapes Qdrant's REST API documents (collections, payload index, points upsert,
query, count, retrieve, delete).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from hopindex.backends.protocols import UnitFilter, UnitPayload, VectorRecord
from hopindex.backends.vector.qdrant_server import QdrantServerConfig, QdrantServerVectorStore
from hopindex.core.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigError,
    InvalidInputError,
    NotFoundError,
)
from hopindex.core.models import Hit, UnitKind
from hopindex.core.settings import Settings
from hopindex.testing.contracts.vector_store import VectorStoreContract, axis, record, uid
from tests.backends.recording_server import RecordingServer, Reply, recording_server
from tests.backends.server_replies import (
    Script,
    qdrant_collection,
    qdrant_error,
    qdrant_ok,
    qdrant_points,
    qdrant_update,
)

QDRANT_URL = os.environ.get("HOPINDEX_TEST_QDRANT_URL", "")
COLLECTION = "/collections/hopindex-wiki"
MISSING = qdrant_error(404, "Not found: Collection `hopindex-wiki` doesn't exist!")
FIELDS = ("kind", "source_doc_ids", "entities")

pytestmark = pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def server(script: Script) -> Iterator[RecordingServer]:
    with recording_server(script) as running:
        yield running


@pytest.fixture
def open_qdrant(server: RecordingServer) -> Iterator[Callable[..., QdrantServerVectorStore]]:
    opened: list[QdrantServerVectorStore] = []

    def factory(url: str | None = None, **settings: object) -> QdrantServerVectorStore:
        config = QdrantServerConfig.from_url(url or f"qdrant://127.0.0.1:{server.port}",
                                             Settings(**settings))  # type: ignore[arg-type]  # per-test overrides
        opened.append(QdrantServerVectorStore(config))
        return opened[-1]

    yield factory
    for store in opened:
        store.close()


def existing(script: Script, dimension: int = 8) -> None:
    script.routes[("GET", COLLECTION)] = qdrant_collection(dimension, FIELDS)


# -- collections -------------------------------------------------------------------------

def test_ensure_index_creates_collection_and_payload_indexes(
        server: RecordingServer, script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]
) -> None:
    """A new index: the collection with one named cosine vector of the embedder's size,
    shard and replica counts from the settings, then a keyword index per payload field,
    each waited for."""
    script.routes[("GET", COLLECTION)] = [MISSING, qdrant_collection(8)]
    script.routes[("PUT", COLLECTION)] = qdrant_ok(True)
    script.routes[("PUT", f"{COLLECTION}/index")] = qdrant_update()
    open_qdrant(qdrant_shard_number=6, qdrant_replication_factor=2).ensure_index("wiki", 8)
    calls = server.take()
    assert [(c.method, c.path) for c in calls] == [
        ("GET", COLLECTION), ("PUT", COLLECTION), ("GET", COLLECTION),
        *[("PUT", f"{COLLECTION}/index")] * 3]
    assert calls[1].json() == {"vectors": {"dense": {"size": 8, "distance": "Cosine"}},
                               "shard_number": 6, "replication_factor": 2}
    assert [c.json() for c in calls[3:]] == [{"field_name": name, "field_schema": "keyword"}
                                             for name in FIELDS]
    assert all(c.query == {"wait": "true"} for c in calls[3:])


def test_server_defaults_leave_shards_to_qdrant(
        server: RecordingServer, script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]
) -> None:
    """Shard number and replication factor 0 are omitted: the server's own defaults."""
    script.routes[("GET", COLLECTION)] = [MISSING, qdrant_collection(8, FIELDS)]
    script.routes[("PUT", COLLECTION)] = qdrant_ok(True)
    open_qdrant().ensure_index("wiki", 8)
    assert server.take()[1].json() == {"vectors": {"dense": {"size": 8, "distance": "Cosine"}}}


def test_ensure_existing_collection_checks_its_dimension(
        server: RecordingServer, script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]
) -> None:
    """An existing collection with its payload indexes costs one GET; another dimension
    is refused, naming both sizes."""
    existing(script)
    store = open_qdrant()
    store.ensure_index("wiki", 8)
    assert [(c.method, c.path) for c in server.take()] == [("GET", COLLECTION)]
    with pytest.raises(BackendError, match=r"holds 8-dimensional vectors.*16-dimensional"):
        store.ensure_index("wiki", 16)


def test_create_race_with_another_process_is_fine(
        script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]) -> None:
    """409 on create (another process won) is success once the collection reads back."""
    script.routes[("GET", COLLECTION)] = [MISSING, qdrant_collection(8, FIELDS)]
    script.routes[("PUT", COLLECTION)] = qdrant_error(
        409, "Wrong input: Collection `hopindex-wiki` already exists!")
    open_qdrant().ensure_index("wiki", 8)


def test_drop_deletes_the_collection_and_forgets_its_dimension(
        server: RecordingServer, script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]
) -> None:
    """DELETE /collections/{name}; a later write looks the collection up again."""
    existing(script)
    script.routes[("DELETE", COLLECTION)] = qdrant_ok(True)
    store = open_qdrant()
    store.ensure_index("wiki", 8)
    store.drop_index("wiki")
    script.routes[("GET", COLLECTION)] = MISSING
    with pytest.raises(NotFoundError, match="'wiki' does not exist"):
        store.upsert_vectors("wiki", [record(1)])
    assert [(c.method, c.path) for c in server.take()] == [
        ("GET", COLLECTION), ("DELETE", COLLECTION), ("GET", COLLECTION)]


# -- writes ------------------------------------------------------------------------------

def test_upsert_sends_points_with_named_vector_and_payload_and_waits(
        server: RecordingServer, script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]
) -> None:
    """Points carry the unit id, the ``dense`` vector and the filter payload; 600 points
    go out as batches of at most 256, each with wait=true."""
    existing(script)
    script.routes[("PUT", f"{COLLECTION}/points")] = qdrant_update()
    first = record(0, kind=UnitKind.BRIDGE, docs=("d1", "d2"), entities=("paris",))
    open_qdrant().upsert_vectors("wiki", [first, *[record(n) for n in range(1, 600)]])
    calls = server.take()[1:]
    assert [len(c.json()["points"]) for c in calls] == [256, 256, 88]
    assert all(c.query == {"wait": "true"} for c in calls)
    sent = calls[0].json()["points"][0]
    assert sent["id"] == first.unit_id
    assert sent["payload"] == {"kind": "bridge", "source_doc_ids": ["d1", "d2"],
                               "entities": ["paris"]}
    assert list(sent["vector"]) == ["dense"]
    np.testing.assert_allclose(sent["vector"]["dense"], first.vector, rtol=1e-6)


def test_bad_records_fail_before_any_write(
        server: RecordingServer, script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]
) -> None:
    """A wrong-size vector or a non-uuid id anywhere in the batch sends no points."""
    existing(script)
    store = open_qdrant()
    bad_size = record(2, vector=axis(0, dim=11))
    with pytest.raises(BackendError, match=r"hopindex-wiki.*dimension mismatch"):
        store.upsert_vectors("wiki", [record(1), bad_size])
    good = record(1)
    with pytest.raises(BackendError, match="'not-a-uuid' is not a uuid"):
        store.upsert_vectors("wiki", [good, VectorRecord("not-a-uuid", good.vector,
                                                         good.payload)])
    assert [c.method for c in server.take()] == ["GET"]


def test_upsert_into_missing_collection_is_not_found(
        script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]) -> None:
    """No collection: NotFoundError naming the index, nothing created."""
    script.routes[("GET", COLLECTION)] = MISSING
    with pytest.raises(NotFoundError, match="'wiki'"):
        open_qdrant().upsert_vectors("wiki", [record(1)])


def test_deletes_by_ids_and_by_filter(
        server: RecordingServer, script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]
) -> None:
    """Deletes by id list (deduplicated) and by filter, both waited for; a missing
    collection is nothing to delete; an empty filter is refused before any request."""
    script.routes[("POST", f"{COLLECTION}/points/delete")] = qdrant_update()
    store = open_qdrant()
    store.delete_vectors("wiki", [uid(1), uid(2), uid(1)])
    store.delete_matching("wiki", UnitFilter(kinds=(UnitKind.BRIDGE,), entities=("paris",)))
    by_ids, by_filter = server.take()
    assert by_ids.query == by_filter.query == {"wait": "true"}
    assert by_ids.json() == {"points": [uid(1), uid(2)]}
    assert by_filter.json() == {"filter": {"must": [
        {"key": "kind", "match": {"any": ["bridge"]}},
        {"key": "entities", "match": {"any": ["paris"]}}]}}
    with pytest.raises(InvalidInputError, match="drop_index"):
        store.delete_matching("wiki", UnitFilter())
    script.routes[("POST", f"{COLLECTION}/points/delete")] = MISSING
    store.delete_vectors("wiki", [uid(1)])


# -- reads -------------------------------------------------------------------------------

def test_search_sends_nearest_on_dense_with_filter_and_limit(
        server: RecordingServer, script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]
) -> None:
    """Query API: nearest to the vector on ``dense``, must-match-any per filter field,
    limit k, no payload or vectors back; hits keep the server's order and scores."""
    existing(script)
    script.routes[("POST", f"{COLLECTION}/points/query")] = qdrant_points(
        [(uid(3), 0.93), (uid(1), 0.41)])
    hits = open_qdrant().search_vectors("wiki", axis(3), k=4, unit_filter=UnitFilter(
        kinds=(UnitKind.AKU, UnitKind.BRIDGE), source_doc_ids=("d1",)))
    assert hits == [Hit(uid(3), 0.93), Hit(uid(1), 0.41)]
    query = server.take()[1].json()
    np.testing.assert_allclose(query.pop("query")["nearest"], axis(3), rtol=1e-6)
    assert query == {"using": "dense", "limit": 4, "with_payload": False, "with_vector": False,
                     "filter": {"must": [
                         {"key": "kind", "match": {"any": ["aku", "bridge"]}},
                         {"key": "source_doc_ids", "match": {"any": ["d1"]}}]}}


def test_search_edge_cases_send_nothing_or_read_as_empty(
        server: RecordingServer, script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]
) -> None:
    """k = 0 sends nothing; a query vector of the wrong size fails before the query; a
    missing collection searches and counts as empty."""
    existing(script)
    store = open_qdrant()
    assert store.search_vectors("wiki", axis(1), k=0) == []
    with pytest.raises(BackendError, match="dimension mismatch"):
        store.search_vectors("wiki", axis(1, dim=5), k=3)
    assert [c.path for c in server.take()] == [COLLECTION]
    other = open_qdrant()
    script.routes[("GET", COLLECTION)] = MISSING
    script.routes[("POST", f"{COLLECTION}/points/count")] = MISSING
    script.routes[("POST", f"{COLLECTION}/points")] = MISSING
    assert other.search_vectors("wiki", axis(1), k=3) == []
    assert other.count_vectors("wiki") == 0
    assert other.get_vectors("wiki", [uid(1)]) == []


def test_count_and_get_vectors(
        server: RecordingServer, script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]
) -> None:
    """Exact count; retrieve asks for payload and the ``dense`` vector and returns the
    records in the order asked, leaving out ids the server does not have."""
    script.routes[("POST", f"{COLLECTION}/points/count")] = qdrant_ok({"count": 5})
    script.routes[("POST", f"{COLLECTION}/points")] = qdrant_ok([
        {"id": uid(2), "payload": {"kind": "bridge", "source_doc_ids": ["d2", "d3"],
                                   "entities": ["berlin"]},
         "vector": {"dense": axis(2).tolist()}},
        {"id": uid(0), "payload": {"kind": "passage", "source_doc_ids": ["d1"],
                                   "entities": []},
         "vector": {"dense": axis(0).tolist()}},
    ])
    store = open_qdrant()
    assert store.count_vectors("wiki") == 5
    got = store.get_vectors("wiki", [uid(0), uid(9), uid(2)])
    count, retrieve = server.take()
    assert count.json() == {"exact": True}
    assert retrieve.json() == {"ids": [uid(0), uid(9), uid(2)], "with_payload": True,
                               "with_vector": ["dense"]}
    assert [r.unit_id for r in got] == [uid(0), uid(2)]
    assert got[1].payload == UnitPayload(kind=UnitKind.BRIDGE, source_doc_ids=("d2", "d3"),
                                         entities=("berlin",))
    np.testing.assert_allclose(got[0].vector, axis(0), rtol=1e-6)


def test_a_closed_adapter_connects_again_on_use(
        script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]) -> None:
    """close() frees the client and its loop; the next call opens new ones, as the
    embedded twin reopens its shards (the contract's fixtures rely on it)."""
    script.routes[("POST", f"{COLLECTION}/points/count")] = qdrant_ok({"count": 2})
    store = open_qdrant()
    store.close()
    store.close()
    assert store.count_vectors("wiki") == 2


# -- failures, auth, options --------------------------------------------------------------

def test_api_key_header_and_refused_key(
        server: RecordingServer, script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]
) -> None:
    """HOPINDEX_QDRANT_API_KEY goes in the ``api-key`` header; a 401/403 is a ConfigError."""
    script.routes[("POST", f"{COLLECTION}/points/count")] = qdrant_ok({"count": 0})
    open_qdrant(qdrant_api_key="q-secret").count_vectors("wiki")
    assert server.take()[0].headers["api-key"] == "q-secret"
    script.routes[("POST", f"{COLLECTION}/points/count")] = Reply(403, {
        "status": {"error": "Forbidden"}})
    with pytest.raises(ConfigError, match="HOPINDEX_QDRANT_API_KEY"):
        open_qdrant(qdrant_api_key="wrong").count_vectors("wiki")


def test_overload_is_retryable_and_unreachable_too(
        script: Script, open_qdrant: Callable[..., QdrantServerVectorStore]) -> None:
    """503 and a closed port are BackendUnavailableError (the task retries later)."""
    script.routes[("POST", f"{COLLECTION}/points/count")] = qdrant_error(503, "overloaded")
    with pytest.raises(BackendUnavailableError):
        open_qdrant().count_vectors("wiki")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(BackendUnavailableError, match="unreachable"):
        open_qdrant(f"qdrant://127.0.0.1:{port}").count_vectors("wiki")


def test_config_from_url_query_and_settings() -> None:
    """Host, TLS, path prefix, gRPC (URL query or setting) and the API key are read; an
    unknown URL option is a ConfigError naming it; the key stays out of repr."""
    config = QdrantServerConfig.from_url(
        "qdrant+https://q.example:7333/qdrant?prefer_grpc=true&grpc_port=7334",
        Settings(qdrant_api_key="q-secret", qdrant_collection_prefix="team-"))
    options = config.client_options()
    assert (options["host"], options["port"], options["https"]) == ("q.example", 7333, True)
    assert (options["prefer_grpc"], options["grpc_port"]) == (True, 7334)
    assert options["prefix"] == "qdrant" and options["api_key"] == "q-secret"
    assert config.collection_prefix == "team-"
    assert "q-secret" not in repr(config)
    plain = QdrantServerConfig.from_url("qdrant://localhost", Settings())
    assert (plain.port, plain.https, plain.prefer_grpc) == (6333, False, False)
    assert QdrantServerConfig.from_url("qdrant://localhost",
                                       Settings(qdrant_prefer_grpc=True)).prefer_grpc
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['grpc'\]"):
        QdrantServerConfig.from_url("qdrant://localhost?grpc=1", Settings())
    with pytest.raises(ConfigError, match="no host"):
        QdrantServerConfig.from_url("qdrant://:6333", Settings())


def test_grpc_client_can_be_built_without_a_server() -> None:
    """prefer_grpc builds the gRPC client (channels open lazily on first use)."""
    store = QdrantServerVectorStore(QdrantServerConfig.from_url(
        "qdrant://127.0.0.1:6333?prefer_grpc=true", Settings()))
    try:
        assert store.config.prefer_grpc
    finally:
        store.close()


# -- the contract suite against a real server -----------------------------------------------

@pytest.mark.integration
@pytest.mark.skipif(not QDRANT_URL, reason="set HOPINDEX_TEST_QDRANT_URL (e.g. qdrant://"
                    "localhost:6333) to run the VectorStore contract against a Qdrant server")
class TestQdrantServerVectorStoreLive(VectorStoreContract):
    """The unchanged contract suite, on collections under a prefix unique to this run."""

    persistent = True
    prefix = f"hopindex-test-{uuid.uuid4().hex[:8]}-"

    def _open(self) -> QdrantServerVectorStore:
        settings = Settings(qdrant_collection_prefix=self.prefix)
        return QdrantServerVectorStore(QdrantServerConfig.from_url(QDRANT_URL, settings))

    @pytest.fixture
    def store(self) -> Iterator[QdrantServerVectorStore]:
        store = self._open()
        yield store
        store.close()

    @pytest.fixture
    def reopen_store(self) -> Iterator[Callable[[], QdrantServerVectorStore]]:
        opened: list[QdrantServerVectorStore] = []

        def reopen() -> QdrantServerVectorStore:
            opened.append(self._open())
            return opened[-1]

        yield reopen
        for store in opened:
            store.close()
