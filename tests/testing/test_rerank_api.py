"""The test server's ``/rerank`` and ``/v1/rerank``: the Cohere and TEI wire shapes,
scored by word overlap, with the chat endpoint's key check, limits and faults, every
outcome counted under ``Endpoint.RERANK``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from hopindex.testing.llm_limits import Endpoint, LlmServerConfig, Outcome
from hopindex.testing.llm_server import LlmTestServer, running_llm_server
from hopindex.testing.rerank_api import relevance
from tests.waiting import wait_until

QUERY = "Where was Marie Curie born?"
DOCUMENTS = ["Photosynthesis converts light into energy.",
             "Marie Curie was born in Warsaw.",
             "Marie Curie won two Nobel Prizes.",
             "WHERE WAS MARIE CURIE BORN"]


@pytest.fixture(scope="module")
def server() -> Iterator[LlmTestServer]:
    with running_llm_server() as clean:
        yield clean


def post(server: LlmTestServer, path: str, body: Any, *, key: str | None = None,
         timeout_s: float = 10.0) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.post(server.root_url + path, json=body, headers=headers, timeout=timeout_s)


def test_relevance_is_word_overlap_in_0_1() -> None:
    """The same words (in any case and order) score 1, no shared word 0, partial overlap
    in between, more shared words higher; a text without words scores 0."""
    assert relevance(QUERY, "born curie MARIE was where") == pytest.approx(1.0)
    assert relevance(QUERY, "Photosynthesis converts light") == 0.0
    assert relevance(QUERY, "") == relevance("", "text") == 0.0
    partial = [relevance(QUERY, text) for text in DOCUMENTS[1:3]]
    assert all(0.0 < score < 1.0 for score in partial)
    assert partial[0] > partial[1]  # born, was, marie, curie against marie, curie


@pytest.mark.parametrize("path", ["/v1/rerank", "/rerank"])
def test_cohere_shape_results_sorted_and_cut_to_top_n(server: LlmTestServer, path: str) -> None:
    """``documents`` in: ``results`` of index and relevance_score, best first, ``top_n``
    of them, documents only when asked, and Cohere's ``meta``."""
    answer = post(server, path, {"model": "rerank-v3.5", "query": QUERY,
                                 "documents": DOCUMENTS, "top_n": 2})
    assert answer.status_code == 200
    body = answer.json()
    scores = [relevance(QUERY, text) for text in DOCUMENTS]
    assert body["results"] == [{"index": 3, "relevance_score": scores[3]},
                               {"index": 1, "relevance_score": scores[1]}]
    assert body["meta"]["billed_units"] == {"search_units": 1}
    assert body["id"].startswith("rerank-hopindex-")
    everything = post(server, path, {"query": QUERY, "return_documents": True,
                                     "documents": [{"text": t} for t in DOCUMENTS]}).json()
    assert [r["index"] for r in everything["results"]] == [3, 1, 2, 0]
    assert everything["results"][0]["document"] == {"text": DOCUMENTS[3]}


def test_tei_shape_is_a_bare_sorted_list(server: LlmTestServer) -> None:
    """``texts`` in: a list of index and score, best first, with the text when asked."""
    answer = post(server, "/rerank", {"query": QUERY, "texts": DOCUMENTS, "raw_scores": False})
    assert answer.status_code == 200
    assert answer.json() == [{"index": i, "score": relevance(QUERY, DOCUMENTS[i])}
                             for i in (3, 1, 2, 0)]
    with_text = post(server, "/rerank", {"query": QUERY, "texts": DOCUMENTS[:1],
                                         "return_text": True}).json()
    assert with_text == [{"index": 0, "score": 0.0, "text": DOCUMENTS[0]}]


@pytest.mark.parametrize(("body", "shape", "message"), [
    ({"documents": ["a"]}, "message", "query must be a non-empty string"),
    ({"query": " ", "texts": ["a"]}, "error", "query must be a non-empty string"),
    ({"query": "q"}, "message", "send documents (Cohere, Jina, vLLM) or texts (TEI)"),
    ({"query": "q", "documents": []}, "message",
     "documents must be a non-empty list of strings"),
    ({"query": "q", "texts": [1]}, "error", "texts must be a non-empty list of strings"),
    ({"query": "q", "documents": ["a"], "top_n": 0}, "message", "top_n must be a positive integer"),
    ([], "message", "request body must be a JSON object"),
])
def test_malformed_requests_are_400_in_their_wires_shape(
        server: LlmTestServer, body: Any, shape: str, message: str) -> None:
    """Cohere answers ``{"message"}``, TEI ``{"error", "error_type"}``; each counted."""
    before = server.stats.count(Endpoint.RERANK, Outcome.BAD_REQUEST)
    answer = post(server, "/v1/rerank", body)
    assert answer.status_code == 400
    assert answer.json()[shape] == message
    assert server.stats.count(Endpoint.RERANK, Outcome.BAD_REQUEST) == before + 1


def test_the_key_is_checked() -> None:
    with running_llm_server(LlmServerConfig(api_key="right")) as guarded:
        body = {"query": QUERY, "documents": DOCUMENTS}
        assert post(guarded, "/v1/rerank", body, key="wrong").status_code == 401
        assert post(guarded, "/v1/rerank", body).status_code == 401
        assert post(guarded, "/v1/rerank", body, key="right").status_code == 200
        assert guarded.stats.count(Endpoint.RERANK, Outcome.UNAUTHORIZED) == 2
        assert guarded.stats.count(Endpoint.RERANK, Outcome.OK) == 1


@pytest.mark.parametrize(("config", "status", "outcome"), [
    (LlmServerConfig(fail_429=1.0), 429, Outcome.RATE_LIMITED),
    (LlmServerConfig(fail_500=1.0), 500, Outcome.SERVER_ERROR),
    (LlmServerConfig(requests_per_minute=1), 429, Outcome.RATE_LIMITED),
])
def test_faults_and_limits_apply(config: LlmServerConfig, status: int, outcome: Outcome) -> None:
    """The chat endpoint's faults and per-minute limits answer rerank requests too (a
    429 with Retry-After), counted under the rerank endpoint."""
    with running_llm_server(config) as faulty:
        body = {"query": QUERY, "texts": DOCUMENTS}
        answers = [post(faulty, "/rerank", body) for _ in range(2)]
        assert answers[-1].status_code == status
        if status == 429:
            assert int(answers[-1].headers["Retry-After"]) >= 1
        assert faulty.stats.count(Endpoint.RERANK, outcome) >= 1
        assert faulty.stats.count(Endpoint.CHAT) == 0


def test_invalid_json_fault_cuts_the_body() -> None:
    with running_llm_server(LlmServerConfig(fail_invalid_json=1.0)) as faulty:
        answer = post(faulty, "/v1/rerank", {"query": QUERY, "documents": DOCUMENTS})
        assert answer.status_code == 200
        with pytest.raises(json.JSONDecodeError):
            json.loads(answer.text)
        assert faulty.stats.count(Endpoint.RERANK, Outcome.INVALID_JSON) == 1


def test_timeout_fault_outlasts_the_client() -> None:
    with running_llm_server(LlmServerConfig(fail_timeout=1.0)) as hanging:
        with pytest.raises(httpx.TimeoutException):
            post(hanging, "/v1/rerank", {"query": QUERY, "documents": DOCUMENTS},
                 timeout_s=0.5)
        # Counted when the hang starts, which a loaded machine may reach after the
        # client gave up.
        wait_until(lambda: hanging.stats.count(Endpoint.RERANK, Outcome.TIMEOUT) == 1,
                   what="the server to count the hanging request", timeout_s=30)
