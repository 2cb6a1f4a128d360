"""kgbridge when the model misbehaves: a document whose extraction is never valid
JSON, and an adjudication that never is."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hopindex.core.models import JobState, UnitKind
from hopindex.methods.kgbridge.graphs import GRAPHS, LINKS
from hopindex.methods.kgbridge.links import list_links
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import LlmClientFactory, ingest_documents, raw
from tests.methods.kgbridge.corpus import CORPUS, ENGINE, INDEX, LINKED_KEYS, kg_client

pytestmark = pytest.mark.integration

StartServer = Callable[..., LlmTestServer]
POISON = "zq-poison-5d2e"


def test_an_extraction_that_stays_invalid_fails_its_document_alone(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """Invalid JSON after the one repair: that document alone fails, named on the job
    under ``kgbridge.graphs`` with the chunk and the reason; the others are indexed and
    linked; a repair with the model fixed extracts it, and only it."""
    server = start_server(invalid_json_marker=POISON)
    client = kg_client(make_llm_client, server)
    bad = raw("Broken", f"Marta Kell wrote this {POISON} passage.", doc_id="broken")
    job = ingest_documents(client, INDEX, [*CORPUS, bad], method="kgbridge")
    assert job.state is JobState.SUCCEEDED_WITH_ERRORS
    assert [(e.item, e.stage) for e in job.errors] == [("broken", "kgbridge.graphs")]
    assert "entity extraction failed at chunk 0" in job.errors[0].reason
    assert "holds no JSON object or array (after one repair call)" in job.errors[0].reason
    state = client.service.backends.state
    assert state.units_of_documents(INDEX, ["broken"]) == []
    assert state.get_records(INDEX, GRAPHS, ["broken"]) == {}
    assert {link["entity"] for link in list_links(state, INDEX)} == LINKED_KEYS
    client.close()

    fixed = start_server()
    client = kg_client(make_llm_client, fixed)
    job = client.indexes.repair_index(INDEX)
    assert job.state is JobState.SUCCEEDED, job.reason
    assert fixed.stats.by_kind == {"kg_extract": 1, "kg_glean": 1, "kg_entity_summaries": 1,
                                   "kg_doc_summary": 1}
    kinds = {u.kind for u in client.service.backends.state.units_of_documents(INDEX,
                                                                              ["broken"])}
    assert kinds == {UnitKind.PASSAGE, UnitKind.ENTITY_SUMMARY, UnitKind.DOC_SUMMARY}
    assert client.indexes.describe_index(INDEX).outstanding.failed == {}


def test_an_adjudication_that_stays_invalid_fails_its_name_and_keeps_its_links(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """A changed document whose names must be adjudicated again while every verdict is
    invalid: each such name fails under ``kgbridge.links`` and keeps the links it had;
    the next job, with the model fixed, adjudicates them again."""
    server = start_server()
    client = kg_client(make_llm_client, server)
    job = ingest_documents(client, INDEX, CORPUS, method="kgbridge")
    assert job.state is JobState.SUCCEEDED
    before = client.service.backends.state.get_records(INDEX, LINKS, sorted(LINKED_KEYS))
    client.close()

    poisoned = start_server(invalid_json_marker="Entity A:")
    client = kg_client(make_llm_client, poisoned)
    changed = raw(ENGINE.title, ENGINE.text.replace("computer", "calculating machine")
                  .replace("mathematician", "mathematician in London"), doc_id="engine")
    job = ingest_documents(client, INDEX, [changed])
    assert job.state is JobState.SUCCEEDED_WITH_ERRORS
    assert sorted((e.item, e.stage) for e in job.errors) == [
        ("ada lovelace", "kgbridge.links"), ("analytical engine", "kgbridge.links")]
    assert all("adjudication of ada / engine failed" in e.reason for e in job.errors)
    state = client.service.backends.state
    assert state.get_records(INDEX, LINKS, sorted(LINKED_KEYS)) == before
    client.close()

    fixed = start_server()
    client = kg_client(make_llm_client, fixed)
    job = client.indexes.repair_index(INDEX)
    assert job.state is JobState.SUCCEEDED, job.reason
    assert fixed.stats.by_kind == {"kg_adjudicate": 2}
    assert client.indexes.describe_index(INDEX).outstanding.failed == {}
    after = client.service.backends.state.get_records(INDEX, LINKS, sorted(LINKED_KEYS))
    assert after != before
