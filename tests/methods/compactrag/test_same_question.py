"""CompactRAG when documents answer one question: each document's answer is its own unit,
a query retrieves every distinct answer and each repeated one once, and deleting or
changing one document leaves the other's unit as it was.

The local test server asks every sentence "What does the text state about <its first
name>?" and answers with the sentence's last other name, so the films below share a
question and answer it from their own text.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import JobState, Unit
from hopindex.readers import ReadResult
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import raw
from tests.methods.indexrag.conftest import LlmClientFactory

pytestmark = pytest.mark.integration

StartServer = Callable[..., LlmTestServer]
INDEX = "films"
QUESTION = "What does the text state about Blue Harbor?"
LIND = raw("Lind film", "Blue Harbor was directed by Anna Lind.", doc_id="harbor-1961")
BERG = raw("Berg film", "Blue Harbor was directed by Karl Berg.", doc_id="harbor-1988")
# States what the 1961 film's document states: the same fact from a third document.
LIND_AGAIN = raw("Lind filmography", "Blue Harbor was directed by Anna Lind.",
                 doc_id="lind-works")
OTHER = raw("Rome", "Rome is the capital of Italy.", doc_id="rome")


def _harbor_units(client: LocalClient) -> dict[str, Unit]:
    """The index's units answering QUESTION, by the one document each cites."""
    state = client.service.backends.state
    units = state.units_of_documents(INDEX, sorted(state.document_hashes(INDEX)))
    found = [u for u in units if u.metadata["question"] == QUESTION]
    assert all(len(u.source_doc_ids) == 1 for u in found)
    return {u.source_doc_ids[0]: u for u in found}


def _retrieved(client: LocalClient) -> list[Unit]:
    result = client.query(INDEX, "Who directed Blue Harbor?", method="compactrag", k=5)
    ids = [u for step in result.trace["sub_questions"] for u in step["units"]]
    return client.service.backends.state.get_units(INDEX, ids)


def test_each_documents_answer_to_a_shared_question_is_kept_and_retrieved(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """Two documents answering one question differently give two units, each citing
    its document; a third repeating one answer gives a third. A query retrieves both
    answers, and the repeated fact once."""
    client = make_llm_client(start_server())
    job = client.ingest_read(INDEX, ReadResult(documents=[LIND, BERG, LIND_AGAIN, OTHER]),
                              method="compactrag")
    assert job.state is JobState.SUCCEEDED, job.reason
    units = _harbor_units(client)
    assert {d: u.metadata["answer"] for d, u in units.items()} == {
        "harbor-1961": "Anna Lind", "harbor-1988": "Karl Berg", "lind-works": "Anna Lind"}
    assert len({u.unit_id for u in units.values()}) == 3
    retrieved = [u for u in _retrieved(client) if u.metadata["question"] == QUESTION]
    assert sorted(u.metadata["answer"] for u in retrieved) == ["Anna Lind", "Karl Berg"]


def test_deleting_or_changing_one_document_leaves_the_others_unit(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """The 1988 film's unit keeps its id while the 1961 film's document is changed and
    then deleted; the changed answer replaces the old one, the deleted one is gone."""
    client = make_llm_client(start_server())
    assert client.ingest_read(INDEX, ReadResult(documents=[LIND, BERG]),
                               method="compactrag").state is (
        JobState.SUCCEEDED)
    before = _harbor_units(client)
    kept = before["harbor-1988"].unit_id
    recut = raw(LIND.title, "Blue Harbor was directed by Maria Holm.", doc_id="harbor-1961")
    assert client.ingest_read(INDEX, ReadResult(documents=[recut])).state is JobState.SUCCEEDED
    changed = _harbor_units(client)
    assert changed["harbor-1988"].unit_id == kept
    assert changed["harbor-1961"].metadata["answer"] == "Maria Holm"
    assert before["harbor-1961"].unit_id not in {u.unit_id for u in _retrieved(client)}
    assert client.delete_documents(INDEX, ["harbor-1961"]).state is JobState.SUCCEEDED
    after = _harbor_units(client)
    assert list(after) == ["harbor-1988"] and after["harbor-1988"].unit_id == kept
    assert [u.metadata["answer"] for u in _retrieved(client)
            if u.metadata["question"] == QUESTION] == ["Karl Berg"]
