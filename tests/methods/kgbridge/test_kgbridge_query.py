"""The kgbridge query against the local test server: its trace (route, plan, links,
iterations, answer), its calls as the server counts them, how it degrades on a plan
naming documents that were not routed and on replies that stay invalid JSON, a loop
whose refined query finds nothing new, and indexes with an empty graph or none. The
loop's refinement and its call bound: ``test_kgbridge_refinement``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import JobState, UnitKind
from hopindex.methods.base import QueryResult
from hopindex.methods.kgbridge import describe_trace
from hopindex.methods.kgbridge.links import list_links
from hopindex.testing.llm_kgbridge import (
    NEVER_SUFFICIENT_MARKER,
    UNROUTED_DOC_ID,
    UNROUTED_PLAN_MARKER,
)
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.conftest import ingest_documents, llm_settings, local_client, raw
from tests.methods.kgbridge.corpus import CORPUS, INDEX, QUIET

pytestmark = pytest.mark.integration

# Every JSON reply to a prompt holding this text is invalid, the repair's included;
# the questions that carry it make both the plan and the sufficiency replies so.
BAD_JSON = "zq-bad-json-71c3"
QUIET_INDEX = "kg-quiet"
EXTRACTIVE_INDEX = "kg-extractive"
BRIDGE_QUESTION = "Who was the father of the woman who wrote programs for the Analytical Engine?"
ASKED = {"kg_plan": 1, "kg_sufficiency": 1, "answer": 1}


@dataclass
class Built:
    server: LlmTestServer
    client: LocalClient

    def ask(self, question: str, index: str = INDEX, k: int = 5) -> tuple[QueryResult, int]:
        """The result and the chat requests the server answered for it."""
        self.server.reset()
        result = self.client.query(index, question, method="kgbridge", k=k)
        return result, self.server.stats.count(Endpoint.CHAT)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    server = LlmTestServer(LlmServerConfig(invalid_json_marker=BAD_JSON)).start_in_thread()
    client = local_client(llm_settings(tmp_path_factory.mktemp("kgbridge-query"), server,
                                       embedder_url=f"openai://{server.config.embedding_model}"))
    try:
        for index, documents, method in (
                (INDEX, CORPUS, "kgbridge"),
                (QUIET_INDEX, [QUIET, raw("Mill notes", "the mill wheel turned all day. "
                                          "flour was carried down the lane.",
                                          doc_id="mill")], "kgbridge"),
                (EXTRACTIVE_INDEX, CORPUS, "extractive")):
            job = ingest_documents(client, index, documents, method=method)
            assert job.state is JobState.SUCCEEDED, (index, job.reason, job.errors)
        yield Built(server=server, client=client)
    finally:
        client.close()
        server.stop()


def test_a_query_traces_route_plan_iterations_and_answer(built: Built) -> None:
    """Routing fuses the entity manifest and the summaries (each routed document with
    its ranks and RRF score), the plan names routed documents, one iteration finds the
    context sufficient, and the answer follows: three calls, counted alike by the
    server and the result; ``--trace`` prints each step."""
    result, calls = built.ask(BRIDGE_QUESTION)
    trace = result.trace
    route = trace["route"]
    assert route["source"] == "entities+summaries"
    assert "analytical engine" in route["entities"]
    routed = [d["doc_id"] for d in route["docs"]]
    assert {"ada", "engine"} <= set(routed[:2])
    assert all(d["manifest_rank"] is not None for d in route["docs"][:2])
    assert all(d["summary_rank"] is not None and d["rrf"] > 0 for d in route["docs"])
    assert [d["rrf"] for d in route["docs"]] == sorted((d["rrf"] for d in route["docs"]),
                                                       reverse=True)
    assert set(trace["plan"]["primary"]) <= set(routed) and trace["plan"]["primary"]
    assert [(i["iteration"], i["sufficient"]) for i in trace["iterations"]] == [(1, True)]
    assert trace["stopped"] == "sufficient" and trace["degraded"] == []
    assert result.answer and trace["answer"] == result.answer
    assert dict(built.server.stats.by_kind) == ASKED
    assert calls == result.usage.llm_calls == 3
    text = "\n".join(describe_trace(trace))
    for expected in ("route by entities+summaries", "plan: primary", "iteration 1: sufficient",
                     "loop stopped: sufficient", f"answer: {result.answer}"):
        assert expected in text


def test_passages_follow_the_context_primary_documents_first(built: Built) -> None:
    """The primary documents come first, each shown by a passage of its own; every
    passage's unit exists, has the kind reported and cites the document; k caps them."""
    result, _ = built.ask(BRIDGE_QUESTION, k=4)
    primary = result.trace["plan"]["primary"]
    assert [p.doc_id for p in result.passages[:len(primary)]] == primary
    assert [p.rank for p in result.passages] == list(range(1, len(result.passages) + 1))
    assert len(result.passages) == 4
    state = built.client.service.backends.state
    for passage in result.passages:
        (unit,) = state.get_units(INDEX, [passage.via_unit_id])
        assert unit.kind.value == passage.via_kind and passage.doc_id in unit.source_doc_ids
    assert result.passages[0].via_kind == UnitKind.PASSAGE.value
    (only,) = built.ask(BRIDGE_QUESTION, k=1)[0].passages
    assert only.doc_id == primary[0]


def test_same_as_links_bring_the_linked_documents_entity(built: Built) -> None:
    """A question about the engine alone makes it the one primary document; its links
    to the Ada Lovelace document are followed, with the stored S_link, and that
    document's entity summaries are in the context and among the passages."""
    result, calls = built.ask("What did Charles Babbage design?")
    trace = result.trace
    assert trace["plan"]["primary"] == ["engine"]
    stored = {(link["entity"], link["link_id"]): link["s_link"]
              for link in list_links(built.client.service.backends.state, INDEX)}
    followed = trace["links_followed"]
    assert followed and all(f["from_doc"] == "engine" and f["to_doc"] == "ada"
                            for f in followed)
    assert {f["entity"] for f in followed} == {"ada lovelace", "analytical engine"}
    assert all(stored[(f["entity"], f["link_id"])] == f["s_link"] >= 0.7 for f in followed)
    linked = [c for c in trace["context"] if c["role"] == "linked"]
    assert {c["unit_id"] for c in linked} == {f["unit_id"] for f in followed}
    assert all(c["doc_id"] == "ada" and c["kind"] == "entity_summary" for c in linked)
    assert "ada" in [p.doc_id for p in result.passages]
    assert "link: ada lovelace engine -> ada (s_link" in "\n".join(describe_trace(trace))
    assert calls == result.usage.llm_calls <= 8


def test_a_refined_plan_that_reads_nothing_new_stops_the_loop(built: Built) -> None:
    """Never sufficient, but the refined query (the next hop, Charles Babbage, is named
    only in the documents already read) is routed and planned back to them: nothing new
    is read, so the loop stops rather than check an unchanged context again. Four
    calls: plan, check, refined plan, answer."""
    result, calls = built.ask(f"Who wrote programs for the Analytical Engine? "
                              f"{NEVER_SUFFICIENT_MARKER}")
    (only,) = result.trace["iterations"]
    assert only["sufficient"] is False
    assert only["sub_question"] == "What is known about Charles Babbage?"
    assert only["refined_query"].endswith(only["sub_question"])
    assert only["route"]["docs"] and only["plan"]["primary"]
    assert set(only["plan"]["primary"]) <= set(result.trace["plan"]["primary"])
    assert only["units_added"] == []
    assert result.trace["stopped"] == "nothing_new"
    assert dict(built.server.stats.by_kind) == {"kg_plan": 2, "kg_sufficiency": 1,
                                                "answer": 1}
    assert calls == result.usage.llm_calls == 4
    assert result.answer


def test_a_plan_naming_documents_not_routed_falls_back_to_the_top_two(built: Built) -> None:
    """The made-up primary and auxiliary ids are dropped and named; the top two routed
    documents become primary."""
    result, calls = built.ask(f"Who wrote programs for the Analytical Engine? "
                              f"{UNROUTED_PLAN_MARKER}")
    trace = result.trace
    routed = [d["doc_id"] for d in trace["route"]["docs"]]
    assert trace["plan"]["primary"] == routed[:2]
    assert trace["plan"]["auxiliary"] == []
    notes = trace["plan"]["degraded"]
    assert any(UNROUTED_DOC_ID in n and "primary" in n for n in notes)
    assert any(UNROUTED_DOC_ID in n and "auxiliary" in n for n in notes)
    assert any("top 2 routed documents" in n for n in notes)
    assert {("plan", n) for n in notes} <= {(d.step, d.reason) for d in result.degraded}
    assert result.answer and calls == result.usage.llm_calls <= 8


def test_replies_that_stay_invalid_json_degrade_without_failing(built: Built) -> None:
    """An unusable plan reply: no repair call (a query has no time for one), the plan
    falls back to the top two routed documents, and the query's later LLM steps are
    skipped at once (the sufficiency loop stops at its first iteration, the answer is
    None); every step is named and the passages are returned."""
    result, calls = built.ask(f"Who wrote programs for the Analytical Engine? {BAD_JSON}")
    trace = result.trace
    routed = [d["doc_id"] for d in trace["route"]["docs"]]
    assert trace["plan"]["primary"] == routed[:2]
    steps = [d.step for d in result.degraded]
    assert steps == ["plan", "reasoning step 1", "answer"]
    assert result.degraded[0].reason.startswith("plan unreadable")
    assert "an earlier LLM step of this query failed" in result.degraded[2].reason
    assert trace["degraded"] == [d.as_dict() for d in result.degraded]
    assert trace["stopped"] == "invalid_reply"
    assert [i["sufficient"] for i in trace["iterations"]] == [False]
    assert result.answer is None and result.passages
    assert dict(built.server.stats.by_kind) == {"kg_plan": 1}
    assert calls == result.usage.llm_calls == 1


def test_an_index_with_an_empty_graph_is_routed_by_its_summaries(built: Built) -> None:
    """No document names an entity: routing has only the summaries, no link is
    followed, and the query still answers with passages."""
    result, calls = built.ask("Where does the river flow past the mill?", index=QUIET_INDEX)
    trace = result.trace
    assert trace["route"]["source"] == "summaries"
    assert trace["route"]["entities"] == []
    assert all(d["manifest_rank"] is None for d in trace["route"]["docs"])
    assert trace["links_followed"] == []
    assert {p.doc_id for p in result.passages} == {"quiet", "mill"}
    assert result.answer and calls == result.usage.llm_calls <= 8


def test_an_index_without_graphs_is_routed_by_its_passages(built: Built) -> None:
    """An index another method built (no summary, no entity unit, no graph record):
    routed by its passages, named in the trace, answered with passages."""
    result, calls = built.ask(BRIDGE_QUESTION, index=EXTRACTIVE_INDEX)
    trace = result.trace
    assert trace["route"]["source"] == "passages"
    assert all(d["passage_rank"] is not None for d in trace["route"]["docs"])
    assert any(d.step == "route" and "routed by passages" in d.reason
               for d in result.degraded)
    assert trace["links_followed"] == []
    assert result.passages and all(p.via_kind == "passage" for p in result.passages)
    assert result.answer and calls == result.usage.llm_calls <= 8
