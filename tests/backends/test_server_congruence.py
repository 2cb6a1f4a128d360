"""The embedded twins and the server request builders agree on what they index and ask.

Keyword: the Elasticsearch documents carry the fields tantivy indexes; the
analyzer the ES mapping declares yields tantivy's ``en_stem`` terms; and the ES
queries (``match``/``match_phrase`` plus ``terms`` filters), read by their
documented meaning over those documents, select exactly the units tantivy
returns. Vectors: Qdrant Edge and the Qdrant server get the same points, vector
configuration, payload indexes, filters and nearest-k requests. Fusion: with the
same rankings from either pair of adapters, hybrid retrieval fuses identically.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tantivy

from hopindex.backends.keyword import elasticsearch_requests as es_req
from hopindex.backends.keyword.elasticsearch_index import (
    ElasticsearchConfig,
    ElasticsearchKeywordIndex,
)
from hopindex.backends.keyword.tantivy_index import ANALYZER, TantivyKeywordIndex, _document
from hopindex.backends.protocols import KeywordRecord, UnitFilter, UnitPayload, VectorRecord
from hopindex.backends.registry import open_embedder
from hopindex.backends.state.sqlite_store import SqliteStateStore
from hopindex.backends.vector import qdrant_edge as edge
from hopindex.backends.vector import qdrant_server_requests as qs_req
from hopindex.backends.vector.qdrant_server import QdrantServerConfig, QdrantServerVectorStore
from hopindex.core.models import Unit, UnitKind
from hopindex.core.settings import Settings
from hopindex.methods.base import FusionMode, QueryOptions, Retrieval, SearchContext
from hopindex.methods.retrieval.search import retrieve_candidates
from hopindex.testing.contracts.keyword_index import CORPUS, NASTY_QUERIES
from hopindex.testing.contracts.keyword_index import record as keyword_record
from hopindex.testing.contracts.vector_store import record as vector_record
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.backends.recording_server import RecordingServer, recording_server
from tests.backends.server_replies import (
    ES_HEADERS,
    Script,
    es_search,
    qdrant_collection,
    qdrant_points,
)

FILTERS = [
    None,
    UnitFilter(kinds=(UnitKind.PASSAGE,)),
    UnitFilter(kinds=(UnitKind.AKU, UnitKind.BRIDGE)),
    UnitFilter(source_doc_ids=("d1",)),
    UnitFilter(entities=("paris", "berlin")),
    UnitFilter(kinds=(UnitKind.PASSAGE, UnitKind.BRIDGE), source_doc_ids=("d1", "d5")),
    UnitFilter(kinds=(UnitKind.AKU,), entities=("york",)),
]
TEXT_QUERIES = ["Eiffel Tower in Paris", "capital zebra unicorn", "New York", "running",
                "capitals of Germany", "the city", *NASTY_QUERIES]
PHRASES = ["New York", "New York City", "capital of France", "York", "quick brown fox",
           "brown quick fox", "capital", "city of Germany", "the headquarters"]
TRICKY_TEXTS = ["Hello, wörld! The runner's 2nd_place café naïve 東京 x² e-mail",
                "C++ and C# (v3.11) vs. Rust's traits; 42nd-floor co-operation",
                "Ünïcödé ÀÉÎ straße İstanbul ﬁne numbers ¾ ⅷ ٣"]


# -- keyword: what is indexed ----------------------------------------------------------

def es_analyzer() -> tantivy.TextAnalyzer:
    """The analyzer the ES mapping declares, rebuilt from its definition with tantivy's
    building blocks: the token pattern is the complement of ES's separator pattern
    (Java's \\p{IsAlphabetic} is Rust's \\p{Alphabetic}), then length, lowercase, stem."""
    settings = es_req.index_settings(k1=1.2, b=0.75, shards=1, replicas=0)["analysis"]
    chain = settings["analyzer"][es_req.TEXT_ANALYZER]
    tokenizer = settings["tokenizer"][chain["tokenizer"]]
    assert tokenizer["type"] == "pattern"
    separator = re.fullmatch(r"\[\^(.+)\]\+", tokenizer["pattern"])
    assert separator is not None, tokenizer
    token = "[" + separator.group(1).replace(r"\p{IsAlphabetic}", r"\p{Alphabetic}") + "]+"
    builder = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(token))
    for name in chain["filter"]:
        spec = settings["filter"].get(name, {"type": name})
        if spec["type"] == "length":
            assert spec["min"] == 0
            builder = builder.filter(tantivy.Filter.remove_long(spec["max"] + 1))
        elif spec["type"] == "lowercase":
            builder = builder.filter(tantivy.Filter.lowercase())
        elif spec["type"] == "stemmer":
            # Lucene's porter2 and tantivy's english are both the Snowball English stemmer.
            assert spec["language"] == "porter2"
            builder = builder.filter(tantivy.Filter.stemmer("english"))
        else:
            raise AssertionError(f"unexpected filter {spec}")
    return builder.build()


ES_ANALYZER = es_analyzer()


def test_es_documents_hold_the_fields_tantivy_indexes() -> None:
    """Same field names and values per unit; keyword fields in ES are tantivy's raw
    fields, the analysed text field is tantivy's en_stem field."""
    mapping = es_req.index_mappings()["properties"]
    for key in CORPUS:
        record = keyword_record(key)
        source = es_req.document_source(record)
        twin = _document(record).to_dict()
        assert set(source) == set(twin) == set(mapping)
        for name, value in source.items():
            assert (value if isinstance(value, list) else [value]) == twin[name], name
    assert {name for name, spec in mapping.items() if spec["type"] == "keyword"} == {
        "unit_id", "kind", "source_doc_ids", "entities"}
    assert mapping["text"]["analyzer"] == es_req.TEXT_ANALYZER
    action = es_req.index_action("hopindex-x", keyword_record("fox"))
    assert action["_id"] == keyword_record("fox").unit_id == action["_source"]["unit_id"]


@pytest.mark.parametrize("text", [*(text for text, *_ in CORPUS.values()), *TRICKY_TEXTS,
                                  "a" * 39 + " " + "b" * 40 + " tail"])
def test_es_analyzer_makes_tantivys_terms(text: str) -> None:
    """The declared ES analysis chain produces en_stem's terms, in order, on ordinary
    text, punctuation, digits, non-Latin scripts and over-long tokens."""
    assert ES_ANALYZER.analyze(text) == ANALYZER.analyze(text)


def test_bm25_parameters_match_tantivys_defaults() -> None:
    """tantivy scores with BM25 k1 = 1.2, b = 0.75: the ES defaults of hopindex's settings."""
    settings = Settings()
    assert (settings.es_bm25_k1, settings.es_bm25_b) == (1.2, 0.75)


# -- keyword: what is asked ------------------------------------------------------------

def _terms(text: str) -> list[str]:
    return ES_ANALYZER.analyze(text)


def _matches(query: dict[str, Any], source: dict[str, Any]) -> bool:
    """What a query selects, read per the Elasticsearch query DSL reference."""
    (kind, body), = query.items()
    if kind == "bool":
        return (all(_matches(q, source) for q in body.get("must", []))
                and all(_matches(q, source) for q in body.get("filter", [])))
    if kind == "terms":
        (name, values), = body.items()
        held = source[name] if isinstance(source[name], list) else [source[name]]
        return bool(set(held) & set(values))
    if kind == "match":
        spec = body["text"]
        assert spec["operator"] == "or" and spec["zero_terms_query"] == "none"
        return bool(set(_terms(spec["query"])) & set(_terms(source["text"])))
    if kind == "match_phrase":
        spec = body["text"]
        assert spec["slop"] == 0 and spec["zero_terms_query"] == "none"
        wanted, held = _terms(spec["query"]), _terms(source["text"])
        return bool(wanted) and any(held[i:i + len(wanted)] == wanted
                                    for i in range(len(held) - len(wanted) + 1))
    raise AssertionError(f"query kind {kind} is not one the adapter sends")


@pytest.fixture(scope="module")
def tantivy_twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TantivyKeywordIndex]:
    store = TantivyKeywordIndex(tmp_path_factory.mktemp("tantivy"))
    store.ensure_index("twin")
    store.index_units("twin", [keyword_record(key) for key in CORPUS])
    yield store
    store.close()


def _es_selects(query: dict[str, Any]) -> set[str]:
    sources = [es_req.document_source(keyword_record(key)) for key in CORPUS]
    return {s["unit_id"] for s in sources if _matches(query, s)}


@pytest.mark.parametrize("unit_filter", FILTERS)
def test_text_queries_select_what_tantivy_finds(tantivy_twin: TantivyKeywordIndex,
                                                unit_filter: UnitFilter | None) -> None:
    """Bag-of-words queries (plain and hostile text), each filter: the ES request selects
    exactly tantivy's hits, and the request asks for k."""
    for query in TEXT_QUERIES:
        body = es_req.search_body(es_req.text_query(query, unit_filter), k=50)
        assert body["size"] == 50
        found = {h.unit_id for h in tantivy_twin.search_text("twin", query, 50, unit_filter)}
        assert _es_selects(body["query"]) == found, query


@pytest.mark.parametrize("unit_filter", FILTERS)
def test_phrase_queries_select_what_tantivy_finds(tantivy_twin: TantivyKeywordIndex,
                                                  unit_filter: UnitFilter | None) -> None:
    """Phrases (and single words as phrases): consecutive terms in both engines."""
    for phrase in [*PHRASES, *NASTY_QUERIES]:
        query = es_req.phrase_query(phrase, unit_filter)
        found = {h.unit_id for h in tantivy_twin.search_phrase("twin", phrase, 50, unit_filter)}
        assert _es_selects(query) == found, phrase


# -- vectors ---------------------------------------------------------------------------

def test_points_collection_and_payload_indexes_agree() -> None:
    """Same id, named vector and payload per unit; same vector name, size and distance;
    keyword payload indexes on the same fields."""
    for n, kind in enumerate(UnitKind):
        record = vector_record(n, kind=kind, docs=("d1", f"d{n}"), entities=(f"e{n}",))
        twin = edge.QdrantEdgeVectorStore._point("twin", 8, record)
        point = qs_req.point("hopindex-twin", 8, record)
        assert (str(twin.id), twin.payload) == (point.id, point.payload)
        assert twin.vector == point.vector
    twin_config = edge._shard_config(384).vectors
    server_config = qs_req.vectors_config(384)
    assert set(twin_config) == set(server_config) == {edge.VECTOR_NAME}
    assert twin_config[edge.VECTOR_NAME].size == server_config[qs_req.VECTOR_NAME].size
    assert str(twin_config[edge.VECTOR_NAME].distance) == "Distance.Cosine"
    assert server_config[qs_req.VECTOR_NAME].distance.value == "Cosine"
    assert edge._PAYLOAD_FIELDS == qs_req.PAYLOAD_FIELDS


@pytest.mark.parametrize("unit_filter", FILTERS)
def test_filters_agree(unit_filter: UnitFilter | None) -> None:
    """The Edge filter and the server's REST filter hold the same must-match-any fields."""
    twin = edge._to_filter(unit_filter)
    server = qs_req.to_filter(unit_filter)
    if twin is None or server is None:
        assert twin is server is None
        return
    assert [(c.key, list(c.match.value)) for c in twin.must] == [
        (c["key"], c["match"]["any"]) for c in server.model_dump(exclude_none=True)["must"]]


def test_nearest_requests_agree() -> None:
    """The Edge query request and the REST query body ask the same: nearest k on
    ``dense``, same filter, ids and scores only."""
    vector = vector_record(3).vector.tolist()
    unit_filter = UnitFilter(kinds=(UnitKind.AKU,), entities=("paris",))
    twin = edge._search_request(vector, 7, unit_filter)
    assert twin.limit == 7 and twin.with_payload is False
    assert re.search(r'using="dense"', repr(twin.query))
    recorded = _recorded_qdrant_query(vector, 7, unit_filter)
    assert recorded["limit"] == 7 and recorded["using"] == edge.VECTOR_NAME
    assert recorded["with_payload"] is False
    np.testing.assert_allclose(recorded["query"]["nearest"], vector, rtol=1e-6)
    expected = qs_req.to_filter(unit_filter)
    assert expected is not None
    assert recorded["filter"] == expected.model_dump(exclude_none=True)


def _recorded_qdrant_query(vector: list[float], k: int, unit_filter: UnitFilter) -> Any:
    script = Script({("GET", "/collections/hopindex-twin"): qdrant_collection(8),
                     ("POST", "/collections/hopindex-twin/points/query"): qdrant_points([])})
    with recording_server(script) as server:
        store = QdrantServerVectorStore(QdrantServerConfig.from_url(
            f"qdrant://127.0.0.1:{server.port}", Settings()))
        try:
            store.search_vectors("twin", np.asarray(vector, dtype=np.float32), k, unit_filter)
        finally:
            store.close()
        return server.requests[-1].json()


# -- fusion across adapters ------------------------------------------------------------

@pytest.fixture
def embedded_context(tmp_path: Path) -> Iterator[SearchContext]:
    """Tantivy, Qdrant Edge and SQLite state over the keyword corpus, embedded by the
    local OpenAI-compatible test server (deterministic vectors, no model to load)."""
    with LlmTestServer(LlmServerConfig(embedding_dimension=16)) as llm:
        settings = Settings(data_dir=tmp_path, llm_base_url=llm.base_url, llm_api_key="k")
        embedder = open_embedder("openai://hopindex-test-embedding", settings)
        state = SqliteStateStore(tmp_path / "state.sqlite3")
        vectors = edge.QdrantEdgeVectorStore(tmp_path / "vectors")
        keywords = TantivyKeywordIndex(tmp_path / "keyword")
        records = [keyword_record(key) for key in CORPUS]
        state.put_units([Unit(unit_id=r.unit_id, index="fuse", kind=r.payload.kind, text=r.text,
                              source_doc_ids=r.payload.source_doc_ids, method="extractive",
                              source_key=r.unit_id, entities=r.payload.entities)
                         for r in records])
        vectors.ensure_index("fuse", embedder.dimension)
        keywords.ensure_index("fuse")
        embedded = embedder.embed_texts([r.text for r in records])
        vectors.upsert_vectors("fuse", [VectorRecord(r.unit_id, v, r.payload)
                                        for r, v in zip(records, embedded, strict=True)])
        keywords.index_units("fuse", records)
        yield SearchContext(vectors=vectors, keywords=keywords, units=state, documents=state,
                            indexes=state, embedder=embedder)
        vectors.close()
        keywords.close()
        state.close()


@pytest.mark.parametrize(("mode", "weights"), [(FusionMode.RRF, (1.0, 1.0)),
                                               (FusionMode.RRF, (1.0, 0.3)),
                                               (FusionMode.PERCENTILE, (0.5, 2.0))])
def test_hybrid_fusion_is_the_same_on_server_adapters(
        embedded_context: SearchContext, mode: FusionMode, weights: tuple[float, float]) -> None:
    """The server adapters, answering with the rankings the embedded engines gave (on
    their own score scales), fuse to the same ranking and scores, and asked each engine
    for the same candidate count and filter."""
    question = "Which capital city has a tower?"
    unit_filter = UnitFilter(kinds=(UnitKind.PASSAGE, UnitKind.AKU, UnitKind.BRIDGE))
    options = QueryOptions(k=3, fusion=mode, dense_weight=weights[0], keyword_weight=weights[1],
                           candidates=4)
    ctx = embedded_context
    dense = ctx.vectors.search_vectors("fuse", ctx.embedder.embed_query(question), 4, unit_filter)
    bm25 = ctx.keywords.search_text("fuse", question, 4, unit_filter)
    assert dense and bm25
    expected = retrieve_candidates(ctx, "fuse", question, options, retrieval=Retrieval.HYBRID,
                                   unit_filter=unit_filter)

    es_script = Script({("POST", "/hopindex-fuse/_search"): es_search(
        [(h.unit_id, h.score * 7.5 + 3.0) for h in bm25])})
    qdrant_script = Script({
        ("GET", "/collections/hopindex-fuse"): qdrant_collection(ctx.embedder.dimension),
        ("POST", "/collections/hopindex-fuse/points/query"): qdrant_points(
            [(h.unit_id, h.score / 2) for h in dense])})
    with recording_server(es_script, headers=ES_HEADERS) as es_server, \
            recording_server(qdrant_script) as qdrant_server:
        servers = _server_context(ctx, es_server, qdrant_server)
        try:
            got = retrieve_candidates(servers, "fuse", question, options,
                                      retrieval=Retrieval.HYBRID, unit_filter=unit_filter)
        finally:
            servers.vectors.close()
            servers.keywords.close()
        es_asked = es_server.requests[-1].json()
        qdrant_asked = qdrant_server.requests[-1].json()
    assert got.hits == expected.hits
    assert es_asked["size"] == qdrant_asked["limit"] == options.candidate_count
    assert es_asked["query"] == es_req.text_query(question, unit_filter)
    expected_filter = qs_req.to_filter(unit_filter)
    assert expected_filter is not None
    assert qdrant_asked["filter"] == expected_filter.model_dump(exclude_none=True)


def test_fusion_weights_are_query_options(embedded_context: SearchContext) -> None:
    """A weight of 0 silences an engine: hybrid then ranks as that engine's partner alone;
    weights out of range are refused naming the option."""
    from hopindex.core.errors import InvalidInputError

    question = "Which capital city has a tower?"
    ctx = embedded_context
    for silenced, alone in (("keyword_weight", Retrieval.DENSE),
                            ("dense_weight", Retrieval.KEYWORD)):
        weights = {"dense_weight": 1.0, "keyword_weight": 1.0, silenced: 0.0}
        options = QueryOptions(k=5, candidates=5, dense_weight=weights["dense_weight"],
                               keyword_weight=weights["keyword_weight"])
        hybrid = retrieve_candidates(ctx, "fuse", question, options, retrieval=Retrieval.HYBRID)
        single = retrieve_candidates(ctx, "fuse", question, options, retrieval=alone)
        ranked = [h.unit_id for h in hybrid.hits if h.score > 0]
        assert ranked == [h.unit_id for h in single.hits], silenced
    with pytest.raises(InvalidInputError, match="keyword_weight"):
        QueryOptions(keyword_weight=-1.0)
    with pytest.raises(InvalidInputError, match="both be 0"):
        QueryOptions(dense_weight=0.0, keyword_weight=0.0)


def _server_context(ctx: SearchContext, es: RecordingServer,
                    qdrant: RecordingServer) -> SearchContext:
    keywords = ElasticsearchKeywordIndex(ElasticsearchConfig.from_url(
        f"elasticsearch://127.0.0.1:{es.port}", Settings()))
    vectors = QdrantServerVectorStore(QdrantServerConfig.from_url(
        f"qdrant://127.0.0.1:{qdrant.port}", Settings()))
    return SearchContext(vectors=vectors, keywords=keywords, units=ctx.units,
                         documents=ctx.documents, indexes=ctx.indexes, embedder=ctx.embedder)


def test_unit_payload_round_trips_through_both_builders() -> None:
    """A payload written by either builder reads back as the same ``UnitPayload``."""
    payload = UnitPayload(kind=UnitKind.BRIDGE, source_doc_ids=("d1", "d2"), entities=("x",))
    unit_id = str(uuid.uuid4())
    assert qs_req.unit_payload("c", unit_id, qs_req.payload_of(payload)) == payload
    source = es_req.document_source(KeywordRecord(unit_id, "t", payload))
    assert (source["kind"], tuple(source["source_doc_ids"]), tuple(source["entities"])) == (
        payload.kind.value, payload.source_doc_ids, payload.entities)

