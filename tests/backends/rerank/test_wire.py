"""Reading a ``/rerank`` reply: both wire shapes and their variants are read leniently,
in any order; a reply that cannot be trusted is a ``RerankError`` naming what was
wrong, after one request; an error reply's own message is quoted."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from hopindex.backends.rerank.http_reranker import HttpReranker, RerankHttpConfig
from hopindex.backends.rerank.observer import RerankOutcome
from hopindex.backends.rerank.scores_cache import rerank_cache_key
from hopindex.backends.rerank.wire import error_message, read_scores, request_body
from hopindex.core.errors import RerankError
from hopindex.core.settings import RerankApi
from hopindex.testing.contracts.reranker import RecordingRerankObserver

URL = "http://rerank.test/v1/rerank"


@pytest.mark.parametrize(("payload", "count", "scores"), [
    ({"results": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}],
      "meta": {"billed_units": {"search_units": 1}}}, 2, [0.1, 0.9]),
    ({"results": [{"index": 0, "score": 2}, {"index": 1, "score": -1.5,
                                             "document": {"text": "x"}}]}, 2, [2.0, -1.5]),
    ([{"index": 2, "score": 0.3}, {"index": 0, "score": 0.2}, {"index": 1, "score": 0.1}],
     3, [0.2, 0.1, 0.3]),
    ({"data": [{"index": 0, "relevance_score": 1}], "usage": {"total_tokens": 3}}, 1, [1.0]),
])
def test_replies_are_read_leniently_in_the_order_sent(payload: Any, count: int,
                                                      scores: list[float]) -> None:
    """Cohere/Jina/vLLM ``results``, TEI's bare list, ``relevance_score`` or ``score``,
    extra fields and any order: one float per text, in the order the texts were sent."""
    assert read_scores(payload, count) == scores


@pytest.mark.parametrize(("payload", "problem"), [
    ({"results": [{"index": 0, "relevance_score": 0.5}]}, r"no score for 1 of 2 texts \(index 1\)"),
    ({"results": [{"index": 0, "relevance_score": 0.5}, {"index": 2, "relevance_score": 0.1}]},
     "index 2, out of range for 2 texts"),
    ({"results": [{"index": 0, "relevance_score": "high"}, {"index": 1,
                                                           "relevance_score": 0.1}]},
     "non-numeric relevance_score: 'high'"),
    ([{"index": 0, "score": None}, {"index": 1, "score": 0.1}], "non-numeric score: None"),
    ([{"index": 0, "score": float("nan")}, {"index": 1, "score": 0.1}], "non-numeric score"),
    ([{"index": 0, "score": 1}, {"index": 0, "score": 1}], "index 0 is scored twice"),
    ([{"index": "0", "score": 1}, {"index": 1, "score": 1}], "no integer index"),
    ([{"index": 0}, {"index": 1, "score": 1}], "no relevance_score or score"),
    ({"answer": []}, "no results list"),
    ("scores", "not results"),
])
def test_untrustworthy_replies_fail_naming_the_problem(payload: Any, problem: str) -> None:
    """Each problem is a ``RerankError`` naming it, after one request, not retried (the
    service answered: asking again gets the same answer); reported as unreadable."""
    observer = RecordingRerankObserver()
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, text=json.dumps(payload))

    reranker = HttpReranker(RerankHttpConfig(url=URL, model="m"), observer=observer,
                            transport=lambda: httpx.MockTransport(answer))
    try:
        with pytest.raises(RerankError, match=problem) as caught:
            reranker.rerank_texts("q", ["a", "b"])
    finally:
        reranker.close()
    assert "cannot be read" in str(caught.value)
    assert not caught.value.retryable
    assert len(sent) == 1
    assert observer.outcomes() == [RerankOutcome.UNREADABLE]


def test_a_body_that_is_not_json_cannot_be_read() -> None:
    reranker = HttpReranker(RerankHttpConfig(url=URL, model="m"), transport=lambda: (
        httpx.MockTransport(lambda _: httpx.Response(200, text='{"results": [{"ind'))))
    try:
        with pytest.raises(RerankError, match="cannot be read"):
            reranker.rerank_texts("q", ["a"])
    finally:
        reranker.close()


@pytest.mark.parametrize("api", list(RerankApi))
def test_each_wire_sends_its_fields_and_the_key(api: RerankApi) -> None:
    """``cohere``: model, query, documents, top_n = every text, no documents back;
    ``tei``: query, texts, normalised scores; both with the bearer key."""
    captured: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        captured.append(request)
        return httpx.Response(200, json=[{"index": 0, "score": 0.5}, {"index": 1, "score": 0.25}])

    config = RerankHttpConfig(url=URL, api=api, model="rerank-v3.5", api_key="sk-rerank")
    reranker = HttpReranker(config, transport=lambda: httpx.MockTransport(answer))
    try:
        assert reranker.rerank_texts("q", ["a", "b"]) == [0.5, 0.25]
    finally:
        reranker.close()
    (request,) = captured
    assert request.headers["Authorization"] == "Bearer sk-rerank"
    body = json.loads(request.content)
    assert body == request_body(api, "rerank-v3.5", "q", ["a", "b"])
    if api is RerankApi.COHERE:
        assert body == {"model": "rerank-v3.5", "query": "q", "documents": ["a", "b"],
                        "top_n": 2, "return_documents": False}
    else:
        assert body["texts"] == ["a", "b"] and body["raw_scores"] is False
        assert body["query"] == "q"


@pytest.mark.parametrize(("payload", "message"), [
    ({"message": "invalid request: query is empty"}, "invalid request: query is empty"),
    ({"error": {"message": "model not found", "type": "invalid_request_error"}},
     "model not found"),
    ({"error": "Input validation error", "error_type": "Validation"}, "Input validation error"),
    ({"detail": "No model"}, "No model"),
    ({"detail": [{"loc": ["body", "query"], "msg": "field required"}]}, "field required"),
])
def test_error_replies_are_quoted_in_the_providers_words(payload: Any, message: str) -> None:
    """Cohere's ``message``, OpenAI's and vLLM's ``error.message``, TEI's ``error``,
    Jina's ``detail``: the message a refused request raises quotes them."""
    assert message in error_message(payload, json.dumps(payload))
    reranker = HttpReranker(RerankHttpConfig(url=URL, model="m"), transport=lambda: (
        httpx.MockTransport(lambda _: httpx.Response(422, json=payload))))
    try:
        with pytest.raises(RerankError, match=r"rejected the request \(422\)") as caught:
            reranker.rerank_texts("q", ["a"])
    finally:
        reranker.close()
    assert message in str(caught.value)


def test_cache_keys_are_apart_from_chat_keys_and_follow_every_input() -> None:
    """A rerank key is prefixed, so it is never a chat key (bare sha256 hex); model,
    wire, query, the texts and their order each change it."""
    base = {"model": "m", "wire": "cohere", "query": "q", "texts": ["a", "b"]}
    key = rerank_cache_key(**base)  # type: ignore[arg-type]
    assert key.startswith("rerank:") and len(key) == len("rerank:") + 64
    changes: list[dict[str, object]] = [{"model": "n"}, {"wire": "tei"}, {"query": "r"},
                                        {"texts": ["b", "a"]}, {"texts": ["a"]}]
    keys = {rerank_cache_key(**{**base, **change}) for change in changes}  # type: ignore[arg-type]
    assert key not in keys and len(keys) == len(changes)
