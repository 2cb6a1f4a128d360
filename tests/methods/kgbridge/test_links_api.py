"""What a route listing and rejecting links calls: ``list_links`` and ``reject_link``,
and a rejection that holds across later ingests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hopindex.core.errors import InvalidInputError, NotFoundError
from hopindex.core.models import JobState
from hopindex.methods.kgbridge.links import REJECTED, UnknownLinkError, list_links, reject_link
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import LlmClientFactory, ingest_documents, raw
from tests.methods.kgbridge.corpus import ADA, CORPUS, INDEX, LINKED_KEYS, kg_client

pytestmark = pytest.mark.integration

StartServer = Callable[..., LlmTestServer]


def test_links_are_listed_by_name_or_all(start_server: StartServer,
                                         make_llm_client: LlmClientFactory) -> None:
    """Every link with its entity key; one name's links, whatever its case and spacing;
    none for a name with no link or unknown."""
    client = kg_client(make_llm_client, start_server())
    ingest_documents(client, INDEX, CORPUS, method="kgbridge")
    state = client.service.backends.state
    every = list_links(state, INDEX)
    assert [link["entity"] for link in every] == sorted(LINKED_KEYS)
    assert list_links(state, INDEX, " analytical   ENGINE ") == [every[1]]
    assert list_links(state, INDEX, "Nobody At All") == []


def test_a_rejected_link_stays_rejected_across_reingests(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """Rejecting a link removes it at once and records who did it; re-ingesting a changed
    end, and deleting and re-ingesting it, neither links the pair again nor asks the
    model about it, while its other names are adjudicated as usual."""
    server = start_server()
    client = kg_client(make_llm_client, server)
    ingest_documents(client, INDEX, CORPUS, method="kgbridge")
    state = client.service.backends.state
    (link,) = list_links(state, INDEX, "Ada Lovelace")
    rejected = reject_link(state, INDEX, link["link_id"], by="reviewer")
    assert rejected["state"] == "rejected" and rejected["by"] == "reviewer"
    assert rejected["a"] == link["a"] and rejected["rejected_at"]
    assert list_links(state, INDEX, "Ada Lovelace") == []
    assert set(state.get_records(INDEX, REJECTED, [link["link_id"]])[link["link_id"]]) == {
        "rejected_at", "by"}
    # Twice: the first rejection stands.
    assert reject_link(state, INDEX, link["link_id"], by="someone else")["by"] == "reviewer"

    before = server.stats.by_kind.get("kg_adjudicate", 0)
    changed = raw(ADA.title, ADA.text.replace("mechanical computer.",
                                              "mechanical computer, in 1843."), doc_id="ada")
    job = ingest_documents(client, INDEX, [changed])
    assert job.state is JobState.SUCCEEDED, job.reason
    # Only the Analytical Engine's pair is asked again: its summary in "ada" changed.
    assert server.stats.by_kind["kg_adjudicate"] - before == 1
    assert [x["entity"] for x in list_links(state, INDEX)] == ["analytical engine"]
    record = state.get_records(INDEX, "kgbridge.links", ["ada lovelace"])["ada lovelace"]
    assert (record["links"], record["rejected"], record["adjudicated"]) == ([], 1, 0)

    assert client.delete_documents(INDEX, ["ada"]).state is JobState.SUCCEEDED
    assert ingest_documents(client, INDEX, [changed]).state is JobState.SUCCEEDED
    assert [x["entity"] for x in list_links(state, INDEX)] == ["analytical engine"]


def test_rejecting_an_unknown_link_names_it(start_server: StartServer,
                                            make_llm_client: LlmClientFactory) -> None:
    """An id no link carries is a not-found error naming it; a rejection must say who
    made it."""
    client = kg_client(make_llm_client, start_server())
    ingest_documents(client, INDEX, CORPUS, method="kgbridge")
    state = client.service.backends.state
    with pytest.raises(UnknownLinkError, match="no link 'feedbeef'") as raised:
        reject_link(state, INDEX, "feedbeef", by="reviewer")
    assert isinstance(raised.value, NotFoundError)
    (link, _) = list_links(state, INDEX)
    with pytest.raises(InvalidInputError) as blank:
        reject_link(state, INDEX, link["link_id"], by="  ")
    assert blank.value.where == "by"
