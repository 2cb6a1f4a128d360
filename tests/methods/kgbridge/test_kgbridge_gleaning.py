"""kgbridge's gleaning pass against the local test server: on (the default) it costs
one more call per chunk and what it finds joins the graph; off it costs none; the dry
run bounds it; and a document's calls stay within 2·(2 per chunk + 2) when replies need
repairs."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hopindex.core.models import JobState, UnitKind
from hopindex.methods.chunking import chunk_document
from hopindex.methods.kgbridge.graphs import GRAPHS
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import LlmClientFactory, ingest_documents, plan_documents, raw
from tests.methods.kgbridge.corpus import CORPUS, INDEX, kg_client

pytestmark = pytest.mark.integration

StartServer = Callable[..., LlmTestServer]
GRAPH_KINDS = ("kg_extract", "kg_glean", "kg_entity_summaries", "kg_doc_summary")
# The test model's first reading lists capitalised names only: the quoted title is what
# its gleaning finds.
NOTES = raw("Ada Lovelace", 'Ada Lovelace published her "notes on the engine" in London.',
            doc_id="notes")
PLAIN = raw("Charles Babbage", "Charles Babbage designed the Difference Engine in London.",
            doc_id="plain")
GLEANED = "notes on the engine"


def test_gleaning_costs_one_call_per_chunk_and_its_entities_join_the_graph(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """Each one-chunk document gets one gleaning call besides its extraction: 2 + 2 calls
    per document. The entity the extraction missed is in the graph, related to the
    listed name sharing its sentence, with an entity unit and a mention; a document
    with nothing missed is unchanged."""
    server = start_server()
    client = kg_client(make_llm_client, server)
    job = ingest_documents(client, INDEX, [NOTES, PLAIN], method="kgbridge")
    assert job.state is JobState.SUCCEEDED, job.reason
    assert {k: server.stats.by_kind[k] for k in GRAPH_KINDS} == {
        "kg_extract": 2, "kg_glean": 2, "kg_entity_summaries": 2, "kg_doc_summary": 2}
    assert job.llm["kgbridge.graphs"].calls == 8
    state = client.service.backends.state
    graphs = state.get_records(INDEX, GRAPHS, ["notes", "plain"])
    notes = {e["key"]: e for e in graphs["notes"]["entities"]}
    assert set(notes) == {"ada lovelace", "london", GLEANED}
    assert {"source": "ada lovelace", "relation": "related to", "target": GLEANED,
            "chunk": 0} in graphs["notes"]["relations"]
    (unit,) = state.get_units(INDEX, [notes[GLEANED]["unit_id"]])
    assert unit.kind is UnitKind.ENTITY_SUMMARY and unit.entities == (GLEANED,)
    assert GLEANED in {m.entity for m in state.mentions_of_documents(INDEX, ["notes"])["notes"]}
    assert {e["key"] for e in graphs["plain"]["entities"]} == {
        "charles babbage", "difference engine", "london"}


def test_gleaning_off_sends_no_gleaning_call(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """``HOPINDEX_KGBRIDGE_GLEANING=false``: no gleaning request, 1 + 2 calls per
    document, and the quoted title stays out of the graph."""
    server = start_server()
    client = kg_client(make_llm_client, server, HOPINDEX_KGBRIDGE_GLEANING="false")
    job = ingest_documents(client, INDEX, [NOTES, PLAIN], method="kgbridge")
    assert job.state is JobState.SUCCEEDED, job.reason
    assert "kg_glean" not in server.stats.by_kind
    assert job.llm["kgbridge.graphs"].calls == 6
    record = client.service.backends.state.get_records(INDEX, GRAPHS, ["notes"])["notes"]
    assert GLEANED not in {e["key"] for e in record["entities"]}


@pytest.mark.parametrize(("gleaning", "per_document"), [("true", 4), ("false", 3)])
def test_the_dry_run_bounds_the_gleaning_calls(
        start_server: StartServer, make_llm_client: LlmClientFactory, gleaning: str,
        per_document: int) -> None:
    """The graphs phase's plan: the extraction requests exactly, then one gleaning call
    per chunk when on, and the two summaries; what the ingest sends stays within it."""
    server = start_server()
    client = kg_client(make_llm_client, server, HOPINDEX_KGBRIDGE_GLEANING=gleaning)
    plan = plan_documents(client, INDEX, [NOTES, PLAIN], method="kgbridge")
    graphs = plan.phases[0]
    assert graphs["phase"] == "kgbridge.graphs"
    assert graphs["calls"] == per_document * 2
    ingest_documents(client, INDEX, [NOTES, PLAIN], method="kgbridge")
    assert sum(server.stats.by_kind.get(k, 0) for k in GRAPH_KINDS) == graphs["calls"]


def test_a_documents_calls_stay_within_the_bound_when_replies_need_repairs(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """Half the JSON replies come back broken: calls are repaired (each at most once), a
    document whose repair breaks too fails alone, and the graphs phase's requests stay
    within 2 · (2 per chunk + 2) per document, the bound docs/methods.md states."""
    server = start_server(fail_invalid_json=0.5, seed=7)
    client = kg_client(make_llm_client, server)
    job = ingest_documents(client, INDEX, CORPUS, method="kgbridge")
    usage = job.llm["kgbridge.graphs"]
    assert usage.repairs > 0
    documents = client.service.backends.state.get_documents(
        INDEX, [d.doc_id or "" for d in CORPUS])
    bound = sum(2 * (2 * len(chunk_document(d)) + 2) for d in documents)
    sent = sum(server.stats.by_kind.get(k, 0) for k in GRAPH_KINDS)
    assert server.stats.by_kind["kg_glean"] > 0
    assert sent == usage.calls <= bound
