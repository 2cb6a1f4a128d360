"""A kgbridge build of a handful of tiny documents against the local test server: the
calls each stage makes, the graph and links records, the pre-filter and the document
bounds, and what later ingests and deletes redo."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import Job, JobState, UnitKind
from hopindex.methods.chunking import chunk_document
from hopindex.methods.kgbridge.graphs import GRAPHS, LINKS
from hopindex.methods.kgbridge.links import list_links
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.conftest import LlmClientFactory, ingest_documents, llm_settings, local_client, raw
from tests.methods.kgbridge.corpus import (
    ADA,
    CANDIDATE_KEYS,
    CORPUS,
    ENGINE,
    INDEX,
    LINKED_KEYS,
    kg_client,
)

pytestmark = pytest.mark.integration

StartServer = Callable[..., LlmTestServer]


@dataclass
class Built:
    server: LlmTestServer
    client: LocalClient
    job: Job
    calls: dict[str, int]  # the server's chat requests by kind, right after the build


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    client = local_client(llm_settings(tmp_path_factory.mktemp("kgbridge"), server,
                                       embedder_url=f"openai://{server.config.embedding_model}"))
    try:
        job = ingest_documents(client, INDEX, CORPUS, method="kgbridge")
        yield Built(server=server, client=client, job=job,
                    calls=dict(server.stats.by_kind))
    finally:
        client.close()
        server.stop()


def test_two_calls_per_chunk_then_two_per_document_then_one_per_pair(built: Built) -> None:
    """Extraction and gleaning (on by default) once per chunk each, entity summaries
    once per document with an entity, the document summary once per document, and one
    adjudication per candidate pair (none filtered by the default bound), as the server
    counted them: with no repair, 2 per chunk + 2 per document."""
    assert built.job.state is JobState.SUCCEEDED, built.job.reason
    documents = built.client.service.backends.state.get_documents(
        INDEX, [d.doc_id or "" for d in CORPUS])
    chunks = sum(len(chunk_document(d)) for d in documents)
    assert chunks == len(CORPUS) + 1  # the Byron document is two chunks
    records = built.client.service.backends.state.get_records(INDEX, LINKS, sorted(CANDIDATE_KEYS))
    assert set(records) == CANDIDATE_KEYS
    assert built.calls == {"kg_extract": chunks, "kg_glean": chunks,
                           "kg_entity_summaries": len(CORPUS) - 1,
                           "kg_doc_summary": len(CORPUS), "kg_adjudicate": 4}
    assert [r["adjudicated"] for r in records.values()] == [1, 1, 1, 1]
    assert built.job.llm["kgbridge.graphs"].calls == 2 * chunks + 2 * len(CORPUS) - 1
    assert built.job.llm["kgbridge.links"].calls == 4


def test_the_links_phase_counts_its_settled_names_as_done(built: Built) -> None:
    """The links phase writes records, not units: every name it settled is done, none
    skipped, in the job's counts."""
    counts = built.job.counts["kgbridge.links"]
    assert counts.total > 0
    assert (counts.done, counts.failed, counts.skipped) == (counts.total, 0, 0)


def test_links_only_at_or_above_tau_and_never_between_different_people(built: Built) -> None:
    """The entity described in two documents is linked; the two John Smiths (a
    footballer, a painter) are a candidate pair, adjudicated, and not linked."""
    state = built.client.service.backends.state
    links = list_links(state, INDEX)
    assert {link["entity"] for link in links} == LINKED_KEYS
    assert all(link["s_link"] >= 0.7 and link["state"] == "linked" for link in links)
    smith = state.get_records(INDEX, LINKS, ["john smith"])["john smith"]
    assert smith == {"links": [], "candidates": 1, "prefiltered": 0, "adjudicated": 1,
                     "rejected": 0}
    assert list_links(state, INDEX, "John  SMITH") == []


def test_a_link_record_has_the_documented_layout(built: Built) -> None:
    """Each link names both ends (document, entity_summary unit, name) and its three
    scores, S_link being 0.7·S_LLM + 0.3·S_emb."""
    state = built.client.service.backends.state
    (link,) = list_links(state, INDEX, "Ada Lovelace")
    assert set(link) == {"entity", "link_id", "a", "b", "s_emb", "s_llm", "s_link", "reason",
                         "state"}
    assert {link["a"]["doc_id"], link["b"]["doc_id"]} == {"ada", "engine"}
    units = {u.unit_id: u for u in state.get_units(INDEX, [link["a"]["unit_id"],
                                                          link["b"]["unit_id"]])}
    assert {u.kind for u in units.values()} == {UnitKind.ENTITY_SUMMARY}
    assert {u.metadata["key"] for u in units.values()} == {"ada lovelace"}
    assert link["s_llm"] == 0.9
    assert link["s_link"] == pytest.approx(0.7 * 0.9 + 0.3 * link["s_emb"], abs=1e-5)
    assert 0 < link["s_emb"] < 1 and link["reason"]


def test_a_graph_record_has_the_documented_layout(built: Built) -> None:
    """The Byron graph: its entity met in both chunks, its summary by the model, the
    manifest's core entities and summary unit, and its two passages in order."""
    state = built.client.service.backends.state
    record = state.get_records(INDEX, GRAPHS, ["byron"])["byron"]
    assert set(record) == {"content_hash", "entities", "relations", "manifest", "passages"}
    byron = next(e for e in record["entities"] if e["key"] == "lord byron")
    assert set(byron) == {"key", "name", "type", "description", "summary", "summary_source",
                          "unit_id", "chunks"}
    assert byron["chunks"] == [0, 1] and byron["summary_source"] == "llm"
    assert byron["summary"] == "Lord Byron was a poet of the Romantic movement."
    (unit,) = state.get_units(INDEX, [byron["unit_id"]])
    assert unit.text == f"Lord Byron (entity): {byron['summary']}"
    assert unit.source_doc_ids == ("byron",) and unit.metadata["doc_id"] == "byron"
    manifest = record["manifest"]
    assert manifest["core_entities"][0] == "lord byron"
    (summary,) = state.get_units(INDEX, [manifest["summary_unit_id"]])
    assert summary.kind is UnitKind.DOC_SUMMARY and summary.text == manifest["summary"]
    passages = state.units_of_documents(INDEX, ["byron"], kinds=(UnitKind.PASSAGE,))
    assert record["passages"] == [u.unit_id for u in sorted(
        passages, key=lambda u: u.metadata["chunk"])]
    assert len(record["passages"]) == 2
    ada = state.get_records(INDEX, GRAPHS, ["ada"])["ada"]
    assert {(r["source"], r["target"]) for r in ada["relations"]} == {
        ("ada lovelace", "analytical engine"), ("ada lovelace", "lord byron")}
    assert ada["manifest"]["core_entities"][0] == "ada lovelace"


def test_an_empty_graph_gets_its_passages_and_a_summary_and_no_entity(built: Built) -> None:
    """A document naming nothing: no entity unit and no mention, but its passage and a
    summary of its opening."""
    state = built.client.service.backends.state
    record = state.get_records(INDEX, GRAPHS, ["quiet"])["quiet"]
    assert record["entities"] == [] and record["relations"] == []
    assert record["manifest"]["core_entities"] == []
    assert record["manifest"]["summary"].startswith("the river flows slowly")
    kinds = sorted(u.kind.value for u in state.units_of_documents(INDEX, ["quiet"]))
    assert kinds == ["doc_summary", "passage"]
    assert state.mentions_of_documents(INDEX, ["quiet"]).get("quiet", []) == []


def test_reingesting_the_unchanged_corpus_calls_no_model(built: Built) -> None:
    """Unchanged documents are skipped by their content hash: no request of any kind
    reaches the server."""
    before = dict(built.server.stats.by_kind)
    job = ingest_documents(built.client, INDEX, CORPUS)
    assert job.state is JobState.SUCCEEDED
    assert built.server.stats.by_kind == before


def test_a_change_that_keeps_the_summaries_costs_only_its_extraction(built: Built) -> None:
    """A sentence naming nothing added to a document: its chunk is extracted and gleaned
    again, and its entity summaries, its summary and its names' adjudications ask the
    same questions, answered by the response cache."""
    before = dict(built.server.stats.by_kind)
    job = ingest_documents(built.client, INDEX, [raw(
        ENGINE.title, ENGINE.text + " It was never finished.", doc_id="engine")])
    assert job.state is JobState.SUCCEEDED, job.reason
    after = built.server.stats.by_kind
    assert {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)} \
        == {"kg_extract": 1, "kg_glean": 1}
    assert job.llm["kgbridge.graphs"].cache_hits == 2  # entity summaries, document summary
    # Charles Babbage was touched too, but is in one document: no pair to ask about.
    assert job.llm["kgbridge.links"].cache_hits == 2
    assert {link["entity"] for link in list_links(built.client.service.backends.state, INDEX)} \
        == LINKED_KEYS


def test_a_changed_summary_readjudicates_only_its_pair(built: Built) -> None:
    """Changing the Analytical Engine's description in one document re-adjudicates the
    one pair it is in; the other names are not asked again."""
    before = dict(built.server.stats.by_kind)
    job = ingest_documents(built.client, INDEX, [raw(
        ENGINE.title, ENGINE.text.replace("by Charles Babbage", "by Charles Babbage in London"),
        doc_id="engine")])
    assert job.state is JobState.SUCCEEDED, job.reason
    assert built.server.stats.by_kind["kg_adjudicate"] - before["kg_adjudicate"] == 1
    state = built.client.service.backends.state
    (link,) = list_links(state, INDEX, "analytical engine")
    engine_graph = state.get_records(INDEX, GRAPHS, ["engine"])["engine"]
    unit_ids = {e["unit_id"] for e in engine_graph["entities"]}
    assert {link["a"]["unit_id"], link["b"]["unit_id"]} & unit_ids


def test_a_deleted_document_takes_its_links_and_graph_with_it(built: Built) -> None:
    """Deleting one end of both links: no link is left, its graph record and mentions
    are gone, and the names it shared have no record any more. Last: it deletes."""
    state = built.client.service.backends.state
    job = built.client.delete_documents(INDEX, [ENGINE.doc_id or ""])
    assert job.state is JobState.SUCCEEDED, job.reason
    assert list_links(state, INDEX) == []
    assert state.get_records(INDEX, GRAPHS, ["engine"]) == {}
    assert state.mentions_of_documents(INDEX, ["engine"]).get("engine", []) == []
    assert state.get_records(INDEX, LINKS, sorted(LINKED_KEYS)) == {}
    assert set(state.get_records(INDEX, LINKS, sorted(CANDIDATE_KEYS))) == {
        "john smith", "lord byron"}
    assert ADA.doc_id in state.document_hashes(INDEX)


def test_the_prefilter_skips_pairs_before_the_model(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """With a bound no cosine reaches, every candidate is counted as pre-filtered, none
    is sent to the model and nothing links; the default bound sent all four."""
    server = start_server()
    client = kg_client(make_llm_client, server, HOPINDEX_KGBRIDGE_MIN_EMBEDDING_SCORE="1.0")
    job = ingest_documents(client, INDEX, CORPUS, method="kgbridge")
    assert job.state is JobState.SUCCEEDED, job.reason
    assert "kg_adjudicate" not in server.stats.by_kind
    records = client.service.backends.state.get_records(INDEX, LINKS, sorted(CANDIDATE_KEYS))
    assert [(r["candidates"], r["prefiltered"], r["adjudicated"]) for r in records.values()] \
        == [(1, 1, 0)] * 4
    assert list_links(client.service.backends.state, INDEX) == []


def test_names_in_too_few_documents_are_not_candidates(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """``HOPINDEX_KGBRIDGE_MIN_DOCS=3``: no name of the corpus is in three documents, so
    there is no candidate, no adjudication and no links record."""
    server = start_server()
    client = kg_client(make_llm_client, server, HOPINDEX_KGBRIDGE_MIN_DOCS="3")
    job = ingest_documents(client, INDEX, CORPUS, method="kgbridge")
    assert job.state is JobState.SUCCEEDED, job.reason
    assert "kg_adjudicate" not in server.stats.by_kind
    assert client.service.backends.state.get_records(INDEX, LINKS, sorted(CANDIDATE_KEYS)) == {}
