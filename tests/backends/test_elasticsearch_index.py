"""The Elasticsearch keyword adapter: the exact requests it sends, and the contract suite
against a real cluster when ``HOPINDEX_TEST_ES_URL`` names one.

The request-shape tests run the official async client against a loopback HTTP
server that records each request and answers with bodies of the shapes the
Elasticsearch 9 REST API documents (bulk, search, count, create index, aliases,
delete by query). The expected requests below are written from that API.
"""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import Callable, Iterator

import pytest

from hopindex.backends.keyword import elasticsearch_requests as req
from hopindex.backends.keyword.elasticsearch_index import (
    ElasticsearchConfig,
    ElasticsearchKeywordIndex,
)
from hopindex.backends.protocols import KeywordRecord, UnitFilter, UnitPayload
from hopindex.core.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigError,
    InvalidInputError,
    NotFoundError,
)
from hopindex.core.models import Hit, UnitKind
from hopindex.core.settings import RefreshPolicy, Settings
from hopindex.testing.contracts.keyword_index import KeywordIndexContract
from tests.backends.recording_server import (
    Recorded,
    RecordingServer,
    Reply,
    recording_server,
)
from tests.backends.server_replies import (
    ES_HEADERS,
    Script,
    es_ack,
    es_bulk,
    es_count,
    es_error,
    es_search,
)

ES_URL = os.environ.get("HOPINDEX_TEST_ES_URL", "")
ALIAS = "hopindex-wiki"


def rec(n: int, text: str = "Marie Curie was born in Warsaw.", *,
        kind: UnitKind = UnitKind.PASSAGE, docs: tuple[str, ...] = ("d1",),
        entities: tuple[str, ...] = ()) -> KeywordRecord:
    return KeywordRecord(unit_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"es-{n}")), text=text,
                         payload=UnitPayload(kind=kind, source_doc_ids=docs, entities=entities))


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def server(script: Script) -> Iterator[RecordingServer]:
    with recording_server(script, headers=ES_HEADERS) as running:
        yield running


@pytest.fixture
def open_es(server: RecordingServer) -> Iterator[Callable[..., ElasticsearchKeywordIndex]]:
    opened: list[ElasticsearchKeywordIndex] = []

    def factory(url: str | None = None, **settings: object) -> ElasticsearchKeywordIndex:
        config = ElasticsearchConfig.from_url(
            url or f"elasticsearch://127.0.0.1:{server.port}",
            Settings(**settings))  # type: ignore[arg-type]  # per-test overrides
        opened.append(ElasticsearchKeywordIndex(config))
        return opened[-1]

    yield factory
    for store in opened:
        store.close()


# -- index creation --------------------------------------------------------------------

def test_ensure_index_creates_index_alias_mappings_and_bm25(
        server: RecordingServer, script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]
) -> None:
    """A new index: HEAD the alias, then PUT the versioned index with its alias, the
    tantivy-equivalent analyzer, BM25 k1/b from the settings, shard and replica counts."""
    script.routes[("HEAD", f"/_alias/{ALIAS}")] = Reply(404)
    script.routes[("PUT", f"/{ALIAS}.v1")] = es_ack(shards_acknowledged=True, index=f"{ALIAS}.v1")
    store = open_es(es_bm25_k1=0.9, es_bm25_b=0.4, es_number_of_shards=3,
                    es_number_of_replicas=2)
    store.ensure_index("wiki")
    head, create = server.take()
    assert (head.method, head.path) == ("HEAD", f"/_alias/{ALIAS}")
    assert (create.method, create.path) == ("PUT", "/hopindex-wiki.v1")
    assert create.json() == {
        "aliases": {ALIAS: {"is_write_index": True}},
        "settings": {
            "index": {"number_of_shards": 3, "number_of_replicas": 2},
            "similarity": {"hopindex_bm25": {"type": "BM25", "k1": 0.9, "b": 0.4}},
            "analysis": {
                "tokenizer": {"hopindex_words": {"type": "pattern",
                                                 "pattern": r"[^\p{IsAlphabetic}\p{N}]+"}},
                "filter": {"hopindex_max_length": {"type": "length", "min": 0, "max": 39},
                           "hopindex_porter2": {"type": "stemmer", "language": "porter2"}},
                "analyzer": {"hopindex_en_stem": {
                    "type": "custom", "tokenizer": "hopindex_words",
                    "filter": ["hopindex_max_length", "lowercase", "hopindex_porter2"]}},
            },
        },
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "unit_id": {"type": "keyword"},
                "text": {"type": "text", "analyzer": "hopindex_en_stem",
                         "similarity": "hopindex_bm25", "index_options": "positions"},
                "kind": {"type": "keyword"},
                "source_doc_ids": {"type": "keyword"},
                "entities": {"type": "keyword"},
            },
        },
    }


def test_ensure_existing_index_sends_nothing_more(
        server: RecordingServer, script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]
) -> None:
    """An alias that exists means the index is there: one HEAD, no create."""
    script.routes[("HEAD", f"/_alias/{ALIAS}")] = Reply(200)
    open_es().ensure_index("wiki")
    assert [(r.method, r.path) for r in server.take()] == [("HEAD", f"/_alias/{ALIAS}")]


def test_ensure_index_race_with_another_process_is_fine(
        script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]) -> None:
    """resource_already_exists_exception (another process won the create) is success;
    any other 400 is an error naming the index."""
    script.routes[("HEAD", f"/_alias/{ALIAS}")] = Reply(404)
    script.routes[("PUT", f"/{ALIAS}.v1")] = es_error(
        400, "resource_already_exists_exception", "index [hopindex-wiki.v1] already exists")
    store = open_es()
    store.ensure_index("wiki")
    script.routes[("PUT", f"/{ALIAS}.v1")] = es_error(
        400, "illegal_argument_exception", "unknown filter type [porter2]")
    with pytest.raises(BackendError, match=r"index 'wiki'.*unknown filter type"):
        store.ensure_index("wiki")


def test_index_prefix_names_the_alias(
        server: RecordingServer, script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]
) -> None:
    """HOPINDEX_ES_INDEX_PREFIX lets several deployments share one cluster."""
    script.routes[("HEAD", "/_alias/team-a-wiki")] = Reply(200)
    open_es(es_index_prefix="team-a-").ensure_index("wiki")
    assert server.take()[0].path == "/_alias/team-a-wiki"


# -- writes ------------------------------------------------------------------------------

def test_index_units_sends_one_bulk_with_ids_sources_refresh_and_require_alias(
        server: RecordingServer, script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]
) -> None:
    """Each unit is an ``index`` action (upsert by id) on the alias, its source holding the
    fields tantivy indexes; refresh follows the setting; require_alias forbids auto-create."""
    script.routes[("PUT", "/_bulk")] = es_bulk()
    records = [rec(1, kind=UnitKind.BRIDGE, docs=("d1", "d2"), entities=("warsaw",)), rec(2)]
    open_es(es_refresh=RefreshPolicy.OFF).index_units("wiki", records)
    (bulk,) = server.take()
    assert bulk.query == {"refresh": "false", "require_alias": "true"}
    assert bulk.headers["Content-Type"].startswith("application/vnd.elasticsearch+x-ndjson")
    assert bulk.ndjson() == [
        {"index": {"_index": ALIAS, "_id": records[0].unit_id}},
        {"unit_id": records[0].unit_id, "text": records[0].text, "kind": "bridge",
         "source_doc_ids": ["d1", "d2"], "entities": ["warsaw"]},
        {"index": {"_index": ALIAS, "_id": records[1].unit_id}},
        {"unit_id": records[1].unit_id, "text": records[1].text, "kind": "passage",
         "source_doc_ids": ["d1"], "entities": []},
    ]


def test_large_batches_are_split_into_bulk_chunks(
        server: RecordingServer, script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]
) -> None:
    """1,200 units go out as bulk requests of at most 500 actions, in order."""
    script.routes[("PUT", "/_bulk")] = es_bulk()
    records = [rec(n) for n in range(1200)]
    open_es().index_units("wiki", records)
    bulks = server.take()
    assert [len(b.ndjson()) // 2 for b in bulks] == [500, 500, 200]
    sent = [line["index"]["_id"] for b in bulks for line in b.ndjson() if "index" in line]
    assert sent == [r.unit_id for r in records]


def test_failed_bulk_items_are_reported_by_unit_with_reasons(
        script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]) -> None:
    """Per-item failures become one BackendError naming each failing unit and why."""
    records = [rec(n) for n in range(4)]
    script.routes[("PUT", "/_bulk")] = es_bulk({
        records[1].unit_id: (400, "mapper_parsing_exception", "failed to parse field [kind]"),
        records[3].unit_id: (400, "document_parsing_exception", "strict mapping"),
    })
    with pytest.raises(BackendError) as caught:
        open_es().index_units("wiki", records)
    message = str(caught.value)
    assert "2 of 4 units failed to index" in message
    assert (f"{records[1].unit_id}: mapper_parsing_exception: failed to parse field [kind]"
            in message)
    assert f"{records[3].unit_id}: document_parsing_exception: strict mapping" in message
    assert records[0].unit_id not in message


def test_bulk_into_missing_alias_is_not_found(
        script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]) -> None:
    """require_alias turns a write to an index never ensured into NotFoundError."""
    records = [rec(1), rec(2)]
    script.routes[("PUT", "/_bulk")] = es_bulk({r.unit_id: (
        404, "index_not_found_exception",
        f"no such index [{ALIAS}] and [require_alias] request flag is [true] and [{ALIAS}] "
        "is not an alias") for r in records})
    with pytest.raises(NotFoundError, match="'wiki' does not exist"):
        open_es().index_units("wiki", records)


def test_items_rejected_with_429_are_retried_alone(
        server: RecordingServer, script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]
) -> None:
    """A unit the cluster pushed back (429) is resent, by itself, and then succeeds."""
    records = [rec(1), rec(2)]
    answered: list[Recorded] = []

    def reply(request: Recorded) -> Reply:
        answered.append(request)
        pushed_back = {records[1].unit_id: (429, "es_rejected_execution_exception", "queue full")}
        return es_bulk(pushed_back if len(answered) == 1 else None)(request)

    script.routes[("PUT", "/_bulk")] = reply
    open_es().index_units("wiki", records)
    first, retry = server.take()
    assert len(first.ndjson()) == 4
    assert [line["index"]["_id"] for line in retry.ndjson() if "index" in line] == [
        records[1].unit_id]


def test_delete_units_sends_bulk_deletes_and_accepts_missing_units(
        server: RecordingServer, script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]
) -> None:
    """Deletes are bulk ``delete`` actions (ids deduplicated); a 404 (unit or index gone)
    is the goal reached; another failure is an error."""
    records = [rec(1), rec(2)]
    script.routes[("PUT", "/_bulk")] = es_bulk({records[1].unit_id: (404, "not_found", "")})
    store = open_es(es_refresh=RefreshPolicy.FORCE)
    store.delete_units("wiki", [records[0].unit_id, records[1].unit_id, records[0].unit_id])
    (bulk,) = server.take()
    assert bulk.query == {"refresh": "true", "require_alias": "true"}
    assert bulk.ndjson() == [{"delete": {"_index": ALIAS, "_id": records[0].unit_id}},
                             {"delete": {"_index": ALIAS, "_id": records[1].unit_id}}]
    script.routes[("PUT", "/_bulk")] = es_bulk({records[0].unit_id: (
        409, "version_conflict_engine_exception", "conflict")})
    with pytest.raises(BackendError, match="1 of 1 units failed to delete"):
        store.delete_units("wiki", [records[0].unit_id])


def test_delete_matching_is_a_delete_by_query_on_the_filter(
        server: RecordingServer, script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]
) -> None:
    """Delete by query: the filter's terms in filter context, conflicts tolerated,
    refresh on; an empty filter is refused before any request."""
    script.routes[("POST", f"/{ALIAS}/_delete_by_query")] = Reply(200, {
        "took": 5, "timed_out": False, "total": 2, "deleted": 2, "batches": 1,
        "version_conflicts": 0, "noops": 0, "retries": {"bulk": 0, "search": 0},
        "throttled_millis": 0, "requests_per_second": -1.0, "throttled_until_millis": 0,
        "failures": []})
    store = open_es()
    store.delete_matching("wiki", UnitFilter(source_doc_ids=("d1", "d2")))
    (call,) = server.take()
    assert call.query == {"conflicts": "proceed", "refresh": "true",
                          "wait_for_completion": "true"}
    assert call.json() == {"query": {"bool": {"filter": [
        {"terms": {"source_doc_ids": ["d1", "d2"]}}]}}}
    with pytest.raises(InvalidInputError, match="drop_index"):
        store.delete_matching("wiki", UnitFilter())
    assert server.take() == []


# -- reads -------------------------------------------------------------------------------

def test_search_text_sends_an_or_match_and_reads_ids_and_scores(
        server: RecordingServer, script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]
) -> None:
    """Bag of words: ``match`` with operator or (never query-string syntax), top k ids
    and scores only, hits in the engine's order."""
    script.routes[("POST", f"/{ALIAS}/_search")] = es_search([("u2", 3.5), ("u1", 1.25)])
    hits = open_es().search_text("wiki", 'capital "of (France', k=7)
    assert hits == [Hit("u2", 3.5), Hit("u1", 1.25)]
    (search,) = server.take()
    assert search.json() == {
        "query": {"match": {"text": {"query": 'capital "of (France', "operator": "or",
                                     "zero_terms_query": "none"}}},
        "size": 7, "_source": False, "track_total_hits": False}


def test_filters_are_terms_in_filter_context(
        server: RecordingServer, script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]
) -> None:
    """Every non-empty filter field is a ``terms`` clause under bool.filter (AND of
    fields, OR within one), so filters select without changing BM25 scores."""
    script.routes[("POST", f"/{ALIAS}/_search")] = es_search([])
    open_es().search_text("wiki", "capital", k=3, unit_filter=UnitFilter(
        kinds=(UnitKind.PASSAGE, UnitKind.BRIDGE), entities=("paris",)))
    assert server.take()[0].json()["query"] == {"bool": {
        "must": [{"match": {"text": {"query": "capital", "operator": "or",
                                     "zero_terms_query": "none"}}}],
        "filter": [{"terms": {"kind": ["passage", "bridge"]}},
                   {"terms": {"entities": ["paris"]}}]}}


def test_search_phrase_sends_match_phrase_with_no_slop(
        server: RecordingServer, script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]
) -> None:
    """A phrase is ``match_phrase`` with slop 0 (consecutive positions), filters as above."""
    script.routes[("POST", f"/{ALIAS}/_search")] = es_search([("u9", 2.0)])
    hits = open_es().search_phrase("wiki", "New York", k=5,
                                   unit_filter=UnitFilter(source_doc_ids=("d4",)))
    assert hits == [Hit("u9", 2.0)]
    assert server.take()[0].json()["query"] == {"bool": {
        "must": [{"match_phrase": {"text": {"query": "New York", "slop": 0,
                                            "zero_terms_query": "none"}}}],
        "filter": [{"terms": {"source_doc_ids": ["d4"]}}]}}


def test_wordless_queries_and_k_zero_send_nothing(
        server: RecordingServer, open_es: Callable[..., ElasticsearchKeywordIndex]) -> None:
    """No term can come out of '!!! ---', and k = 0 wants nothing: no round trip."""
    store = open_es()
    assert store.search_text("wiki", "!!! ---", k=5) == []
    assert store.search_phrase("wiki", "  ", k=5) == []
    assert store.search_text("wiki", "capital", k=0) == []
    assert server.take() == []


def test_missing_index_reads_as_empty(
        script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]) -> None:
    """404 index_not_found on search, count, drop: empty, zero, nothing to drop."""
    missing = es_error(404, "index_not_found_exception", f"no such index [{ALIAS}]")
    script.routes[("POST", f"/{ALIAS}/_search")] = missing
    script.routes[("POST", f"/{ALIAS}/_count")] = missing
    script.routes[("GET", f"/_alias/{ALIAS}")] = Reply(404, {"error": f"alias [{ALIAS}] missing",
                                                             "status": 404})
    store = open_es()
    assert store.search_text("wiki", "capital", k=5) == []
    assert store.count_units("wiki") == 0
    store.drop_index("wiki")


def test_count_and_drop(server: RecordingServer, script: Script,
                        open_es: Callable[..., ElasticsearchKeywordIndex]) -> None:
    """count is the _count API on the alias; drop resolves the alias and deletes the
    concrete indexes by name (wildcard deletes are refused by default in ES 8+)."""
    script.routes[("POST", f"/{ALIAS}/_count")] = es_count(12)
    script.routes[("GET", f"/_alias/{ALIAS}")] = Reply(200, {
        f"{ALIAS}.v1": {"aliases": {ALIAS: {"is_write_index": True}}}})
    script.routes[("DELETE", f"/{ALIAS}.v1")] = es_ack()
    store = open_es()
    assert store.count_units("wiki") == 12
    store.drop_index("wiki")
    assert [(r.method, r.path) for r in server.take()] == [
        ("POST", f"/{ALIAS}/_count"), ("GET", f"/_alias/{ALIAS}"), ("DELETE", f"/{ALIAS}.v1")]


def test_a_closed_adapter_connects_again_on_use(
        server: RecordingServer, script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]
) -> None:
    """close() frees the client and its loop; the next call opens new ones, as the
    embedded twins reopen their indexes (the contract's fixtures rely on it)."""
    script.routes[("POST", f"/{ALIAS}/_count")] = es_count(4)
    store = open_es()
    store.close()
    store.close()
    assert store.count_units("wiki") == 4
    assert len(server.take()) == 1


# -- failures, auth, TLS ------------------------------------------------------------------

def test_overloaded_cluster_is_retryable_and_bad_requests_are_not(
        script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]) -> None:
    """503 (after the client's own retries) is BackendUnavailableError (retryable);
    a 400 is a BackendError naming the index and the engine's reason."""
    script.routes[("POST", f"/{ALIAS}/_search")] = es_error(
        503, "cluster_block_exception", "blocked by: [SERVICE_UNAVAILABLE]")
    store = open_es()
    with pytest.raises(BackendUnavailableError) as caught:
        store.search_text("wiki", "capital", k=3)
    assert caught.value.retryable
    script.routes[("POST", f"/{ALIAS}/_search")] = es_error(
        400, "search_phase_execution_exception", "all shards failed")
    with pytest.raises(BackendError, match="index 'wiki': searching failed: 400 "
                                           "search_phase_execution_exception") as bad:
        store.search_text("wiki", "capital", k=3)
    assert not bad.value.retryable


def test_unreachable_cluster_is_retryable() -> None:
    """Nothing listening: BackendUnavailableError, not a client traceback."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = ElasticsearchKeywordIndex(ElasticsearchConfig.from_url(
        f"elasticsearch://127.0.0.1:{port}", Settings(es_timeout_s=2.0)))
    try:
        with pytest.raises(BackendUnavailableError, match="unreachable"):
            store.count_units("wiki")
    finally:
        store.close()


def test_api_key_and_basic_auth_headers(
        server: RecordingServer, script: Script, open_es: Callable[..., ElasticsearchKeywordIndex]
) -> None:
    """HOPINDEX_ES_API_KEY sends ``ApiKey``; user:password in the URL sends Basic; a
    refused credential is a ConfigError naming the settings."""
    script.routes[("POST", f"/{ALIAS}/_count")] = es_count(0)
    open_es(es_api_key="a2V5OnNlY3JldA==").count_units("wiki")
    assert server.take()[0].headers["Authorization"] == "ApiKey a2V5OnNlY3JldA=="
    open_es(f"elasticsearch://elastic:p%40ss@127.0.0.1:{server.port}").count_units("wiki")
    expected = base64.b64encode(b"elastic:p@ss").decode()
    assert server.take()[0].headers["Authorization"] == f"Basic {expected}"
    script.routes[("POST", f"/{ALIAS}/_count")] = es_error(
        401, "security_exception", "unable to authenticate user [elastic]")
    with pytest.raises(ConfigError, match="HOPINDEX_ES_API_KEY"):
        open_es(es_username="elastic", es_password="wrong").count_units("wiki")


def test_config_from_url_and_settings(tmp_path: object) -> None:
    """Hosts, TLS, credentials and creation settings come from the URL and Settings;
    contradictions and missing files are ConfigErrors naming the variable."""
    from pathlib import Path

    ca = Path(str(tmp_path)) / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    config = ElasticsearchConfig.from_url(
        "elasticsearch+https://es1:9201,es2/prefix",
        Settings(es_ca_file=str(ca), es_verify_certs=False, es_api_key="sekrit-key"))
    assert config.hosts == ("https://es1:9201/prefix", "https://es2:9200/prefix")
    options = config.client_options()
    assert options["ca_certs"] == str(ca)
    assert options["verify_certs"] is False
    assert options["api_key"] == "sekrit-key"
    assert "sekrit-key" not in repr(config)
    plain = ElasticsearchConfig.from_url("elasticsearch://localhost", Settings()).client_options()
    assert plain["hosts"] == ["http://localhost:9200"] and "verify_certs" not in plain
    with pytest.raises(ConfigError, match="HOPINDEX_ES_CA_FILE"):
        ElasticsearchConfig.from_url("elasticsearch+https://es1", Settings(es_ca_file="/nope"))
    with pytest.raises(ConfigError, match="one way to authenticate"):
        ElasticsearchConfig.from_url("elasticsearch://u:p@es1", Settings(es_api_key="k"))
    with pytest.raises(ConfigError, match="bad host"):
        ElasticsearchConfig.from_url("elasticsearch://es1:port", Settings())
    with pytest.raises(ConfigError, match="HOPINDEX_ES_BM25_K1"):
        Settings(es_bm25_b=1.5).validate()
    with pytest.raises(ConfigError, match="HOPINDEX_ES_INDEX_PREFIX"):
        Settings(es_index_prefix="_Bad").validate()


def test_request_builders_match_the_adapter_contract() -> None:
    """The alias never collides with a concrete index of another hopindex index: index
    names have no dot, concrete names always do."""
    assert req.alias_name("hopindex-", "wiki-v1") == "hopindex-wiki-v1"
    assert req.concrete_name("hopindex-", "wiki") == "hopindex-wiki.v1"
    assert "." not in req.alias_name("hopindex-", "wiki")


# -- the contract suite against a real cluster ----------------------------------------------

@pytest.mark.integration
@pytest.mark.skipif(not ES_URL, reason="set HOPINDEX_TEST_ES_URL (e.g. elasticsearch://"
                    "localhost:9200) to run the KeywordIndex contract against Elasticsearch")
class TestElasticsearchKeywordIndexLive(KeywordIndexContract):
    """The unchanged contract suite, on indexes under a prefix unique to this run."""

    persistent = True
    prefix = f"hopindex-test-{uuid.uuid4().hex[:8]}-"

    def _open(self) -> ElasticsearchKeywordIndex:
        settings = Settings(es_index_prefix=self.prefix, es_refresh=RefreshPolicy.FORCE,
                            es_number_of_replicas=0)
        return ElasticsearchKeywordIndex(ElasticsearchConfig.from_url(ES_URL, settings))

    @pytest.fixture
    def store(self) -> Iterator[ElasticsearchKeywordIndex]:
        store = self._open()
        yield store
        store.close()

    @pytest.fixture
    def reopen_store(self) -> Iterator[Callable[[], ElasticsearchKeywordIndex]]:
        opened: list[ElasticsearchKeywordIndex] = []

        def reopen() -> ElasticsearchKeywordIndex:
            opened.append(self._open())
            return opened[-1]

        yield reopen
        for store in opened:
            store.close()
