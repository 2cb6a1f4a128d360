"""The kgbridge reasoning loop against the local test server, on a chain of documents
no SAME_AS link joins (each name is described differently in its two documents): the
answer's document is reached only by routing and planning the refined query again;
the loop's call bound, reached; and a refined plan that fails stops the loop."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import JobState
from hopindex.core.settings import CacheMode
from hopindex.methods.base import QueryResult
from hopindex.methods.kgbridge import describe_trace
from hopindex.methods.kgbridge.links import list_links
from hopindex.readers import RawDocument
from hopindex.testing.llm_kgbridge import NEVER_SUFFICIENT_MARKER
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.conftest import LlmClientFactory, ingest_documents, llm_settings, local_client, raw
from tests.methods.kgbridge.corpus import kg_client

pytestmark = pytest.mark.integration

StartServer = Callable[..., LlmTestServer]
INDEX = "kg-chain"
# Ada -> her father -> where he died -> the gulf it lies on: one hop per document.
CHAIN: list[RawDocument] = [
    raw("Ada Lovelace", "Ada Lovelace wrote the first published program. Ada Lovelace was "
        "the daughter of Lord Byron.", doc_id="ada"),
    raw("Lord Byron", "Lord Byron was a poet. Lord Byron died at Missolonghi.",
        doc_id="byron"),
    raw("Missolonghi", "Missolonghi lies on the Gulf of Patras.", doc_id="missolonghi"),
    raw("Gulf of Patras", "The Gulf of Patras is a branch of the Ionian Sea.",
        doc_id="patras"),
    raw("Charles Babbage", "Charles Babbage designed the Difference Engine.",
        doc_id="babbage"),
]
QUESTION = "In which place did the father of Ada Lovelace die?"
# Only a refined query holds the test model's sub-question: its plan prompt alone.
SUB_QUESTION_TEXT = "What is known about"


@dataclass
class Chain:
    server: LlmTestServer
    client: LocalClient

    def ask(self, question: str) -> tuple[QueryResult, int]:
        """The result and the chat requests the server answered for it."""
        self.server.reset()
        result = self.client.query(INDEX, question, method="kgbridge", k=5)
        return result, self.server.stats.count(Endpoint.CHAT)


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chain]:
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    # No response cache: two questions refined alike must both reach the server.
    client = local_client(llm_settings(tmp_path_factory.mktemp("kgbridge-chain"), server,
                                       embedder_url=f"openai://{server.config.embedding_model}",
                                       llm_cache=CacheMode.OFF))
    try:
        job = ingest_documents(client, INDEX, CHAIN, method="kgbridge")
        assert job.state is JobState.SUCCEEDED, (job.reason, job.errors)
        # The chain's names are in two documents each, described apart: no link.
        assert list_links(client.service.backends.state, INDEX) == []
        yield Chain(server=server, client=client)
    finally:
        client.close()
        server.stop()


def test_the_answers_document_is_reached_by_routing_and_planning_the_refined_query(
        chain: Chain) -> None:
    """The first plan reads Ada Lovelace's document alone (no link leaves it); the
    context falls short, and the refined query (findings ⊕ sub-question) names her
    father: routed again, it finds his document by its entities, the second plan makes
    it primary, its summary and passage join the context (round 1), the next check
    finds the context sufficient. Five calls; the trace shows both routes and plans."""
    result, calls = chain.ask(QUESTION)
    trace = result.trace
    assert trace["plan"]["primary"] == ["ada"] and trace["plan"]["auxiliary"] == []
    assert trace["links_followed"] == []
    assert {c["doc_id"] for c in trace["context"] if c["round"] == 0} == {"ada"}
    first, second = trace["iterations"]
    assert first["sufficient"] is False
    assert first["findings"] == "Ada Lovelace was the daughter of Lord Byron."
    assert first["sub_question"] == "What is known about Lord Byron?"
    assert first["refined_query"] == f"{first['findings']} {first['sub_question']}"
    routed = {d["doc_id"]: d for d in first["route"]["docs"]}
    assert "lord byron" in first["route"]["entities"]
    assert routed["byron"]["manifest_rank"] is not None
    assert "byron" in first["plan"]["primary"]
    added = [c for c in trace["context"] if c["unit_id"] in first["units_added"]]
    assert added and {(c["doc_id"], c["round"]) for c in added} == {("byron", 1)}
    assert {c["role"] for c in added} == {"primary_summary", "primary_chunk"}
    assert second["sufficient"] is True and second["route"] is None
    assert trace["stopped"] == "sufficient" and result.degraded == []
    assert "byron" in [p.doc_id for p in result.passages]
    assert dict(chain.server.stats.by_kind) == {"kg_plan": 2, "kg_sufficiency": 2, "answer": 1}
    assert calls == result.usage.llm_calls == 5
    text = "\n".join(describe_trace(trace))
    for expected in ("iteration 1: not sufficient", f"  refined query: {first['refined_query']}",
                     "  route by entities+summaries", "  plan: primary ada, byron",
                     "iteration 2: sufficient", "loop stopped: sufficient"):
        assert expected in text


def test_a_loop_never_sufficient_reaches_the_call_bound(chain: Chain) -> None:
    """Never sufficient: each of the three iterations checks, refines towards the next
    hop, routes and plans again and reads something new (the father, the town as an
    auxiliary entity, the gulf), then the answer: 1 + 3·2 + 1 = 8 calls, the most a
    query makes (no repair call at query time)."""
    result, calls = chain.ask(f"{QUESTION} {NEVER_SUFFICIENT_MARKER}")
    trace = result.trace
    iterations = trace["iterations"]
    assert [i["sufficient"] for i in iterations] == [False, False, False]
    assert [i["sub_question"] for i in iterations] == [
        "What is known about Lord Byron?", "What is known about Missolonghi?",
        "What is known about Gulf of Patras?"]
    assert all(i["route"] and i["plan"] and i["units_added"] for i in iterations)
    assert {"doc_id": "missolonghi", "entities": ["Missolonghi"]} in iterations[1]["plan"][
        "auxiliary"]
    assert "patras" in iterations[2]["plan"]["primary"]
    assert {c["round"] for c in trace["context"]} == {0, 1, 2, 3}
    assert trace["stopped"] == "max_iterations"
    assert dict(chain.server.stats.by_kind) == {"kg_plan": 4, "kg_sufficiency": 3,
                                                "answer": 1}
    assert calls == result.usage.llm_calls == 8
    assert result.answer


def test_each_iteration_costs_two_calls_and_none_runs_at_zero(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """Never sufficient, ``HOPINDEX_KGBRIDGE_MAX_ITERATIONS`` 1: plan, check, refined
    plan, answer (2 + 2·1 calls); 0: the plan and the answer, no loop."""
    for iterations, kinds in ((1, {"kg_plan": 2, "kg_sufficiency": 1, "answer": 1}),
                              (0, {"kg_plan": 1, "answer": 1})):
        server = start_server()
        client = kg_client(make_llm_client, server, f"iterations-{iterations}",
                           HOPINDEX_KGBRIDGE_MAX_ITERATIONS=str(iterations))
        job = ingest_documents(client, INDEX, CHAIN, method="kgbridge")
        assert job.state is JobState.SUCCEEDED, job.reason
        server.reset()
        result = client.query(INDEX, f"{QUESTION} {NEVER_SUFFICIENT_MARKER}",
                              method="kgbridge", k=5)
        assert len(result.trace["iterations"]) == iterations
        assert result.trace["stopped"] == ("max_iterations" if iterations else "disabled")
        assert dict(server.stats.by_kind) == kinds
        assert result.usage.llm_calls == 2 + 2 * iterations


def test_a_refined_plan_that_fails_stops_the_loop_and_the_query_returns_what_it_has(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """The refined query's plan reply is never valid JSON: no repair call, the loop
    stops there (its route kept in the trace, no plan, nothing read), the query's
    policy sends no further call (the answer is skipped), and the passages of what was
    read and routed come back, every step named."""
    server = start_server(invalid_json_marker=SUB_QUESTION_TEXT)
    client = kg_client(make_llm_client, server)
    job = ingest_documents(client, INDEX, CHAIN, method="kgbridge")
    assert job.state is JobState.SUCCEEDED
    server.reset()
    result = client.query(INDEX, QUESTION, method="kgbridge", k=5)
    trace = result.trace
    (only,) = trace["iterations"]
    assert only["route"]["docs"] and only["plan"] is None and only["units_added"] == []
    assert trace["stopped"] == "plan_failed"
    assert [d.step for d in result.degraded] == ["plan (iteration 1)", "answer"]
    assert "loop stopped" in result.degraded[0].reason
    assert "an earlier LLM step of this query failed" in result.degraded[1].reason
    assert result.answer is None and result.passages
    assert result.passages[0].doc_id == "ada"
    assert dict(server.stats.by_kind) == {"kg_plan": 2, "kg_sufficiency": 1}
    assert result.usage.llm_calls == 3
