"""SiReRAG builds when the model misbehaves: a passage whose propositions are never valid
JSON, and a cluster whose summary comes back empty every time."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hopindex.core.models import JobState, UnitKind
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS, LlmClientFactory, ingest_documents, raw

pytestmark = pytest.mark.integration

StartServer = Callable[..., LlmTestServer]
POISON = "zq-poison-7f3a"
# Enough documents that the similarity tree has clusters besides the poisoned one's.
CORPUS = [*CURIE_CORPUS, *(raw(f"Town {n}", f"Town {n} lies on the River Vale. Its mayor "
                               f"is Ann Vale {n}. The town has {n} bridges.")
                           for n in range(14))]


def test_a_passage_whose_propositions_stay_invalid_fails_alone_and_is_retried(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """Invalid JSON after the one repair: that document alone fails, named on the job
    under ``sirerag.propositions``; the others are indexed and the trees built; the
    next job (a repair, with the model fixed) indexes it and calls the model only for
    it and for the clusters that changed."""
    server = start_server(invalid_json_marker=POISON)
    client = make_llm_client(server)
    bad = raw("Broken", f"This passage makes the model reply {POISON} badly.", doc_id="broken")
    job = ingest_documents(client, "town", [*CORPUS, bad], method="sirerag")
    assert job.state is JobState.SUCCEEDED_WITH_ERRORS
    assert [(e.item, e.stage) for e in job.errors] == [("broken", "sirerag.propositions")]
    assert "holds no JSON object or array (after one repair call)" in job.errors[0].reason
    assert server.stats.by_kind["propositions"] == len(CORPUS) + 2  # the one repair
    state = client.service.backends.state
    assert state.document_hashes("town")["broken"] == ""
    assert state.units_of_documents("town", ["broken"]) == []
    assert state.count_units("town")[UnitKind.SUMMARY] > 0
    assert [(f.phase, f.item) for f in client.service.outstanding("town").failed] == [
        ("sirerag.propositions", "broken")]
    client.close()

    fixed = start_server()
    client = make_llm_client(fixed)
    job = client.indexes.repair_index("town")
    assert job.state is JobState.SUCCEEDED, job.reason
    assert fixed.stats.by_kind["propositions"] == 1
    assert client.service.backends.state.units_of_documents("town", ["broken"], kinds=(
        UnitKind.PASSAGE,))
    assert client.indexes.describe_index("town").outstanding.failed == {}


def test_a_summary_that_fails_for_good_leaves_the_build_partial(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """An empty summary for the clusters holding one passage: those nodes fail, named
    with their tree and level; the job is ``succeeded_with_errors`` and the index
    partial, never silently complete; a repair with the model fixed builds them."""
    server = start_server(empty_text_marker=POISON)
    client = make_llm_client(server)
    odd = raw("Odd", f"{POISON} is the word the Odd passage starts with.", doc_id="odd")
    job = ingest_documents(client, "town", [*CORPUS, odd], method="sirerag")
    assert job.state is JobState.SUCCEEDED_WITH_ERRORS
    assert job.errors
    assert {e.stage for e in job.errors} <= {"sirerag.similarity", "sirerag.relatedness"}
    assert all("summary failed" in e.reason and "empty" in e.reason for e in job.errors)
    outstanding = client.service.outstanding("town")
    assert outstanding.status.value == "partial"
    failed = {f.item for f in outstanding.failed}
    assert failed == {e.item for e in job.errors}
    client.close()

    fixed = start_server()
    client = make_llm_client(fixed)
    job = client.indexes.repair_index("town")
    assert job.state is JobState.SUCCEEDED, job.reason
    assert client.indexes.describe_index("town").outstanding.failed == {}
    assert fixed.stats.by_kind["summary"] >= len(failed)
