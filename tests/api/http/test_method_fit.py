"""A query method asked of an index it cannot read is a 400 naming the methods that can,
on a real server with an LLM configured (the local test server), before any LLM call."""

from __future__ import annotations

from typing import Any

import pytest

from hopindex.methods.registry import default_query, fitting_queries
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmTestServer
from tests.api.http.conftest import Api, ApiFactory, sample_documents

pytestmark = pytest.mark.integration

QUESTION = "Which documents answer this?"


@pytest.fixture(scope="module")
def api(make_api: ApiFactory, llm: LlmTestServer) -> Api:
    """A server with an LLM, holding "rag" (built with indexrag) and "ext" (extractive)."""
    api = make_api(llm_model=llm.config.model, llm_base_url=llm.base_url,
                   llm_api_key="test-key")
    _, docs = sample_documents(limit=4)
    for index, method in (("rag", "indexrag"), ("ext", "extractive")):
        job = api.call("POST", f"/v1/indexes/{index}/documents", params={"method": method},
                       json=docs)
        assert job.status_code == 202, job.text
        assert api.wait_job(job.json()["job_id"])["state"] == "succeeded"
    return api


def refusal(api: Api, index: str, body: dict[str, Any]) -> dict[str, Any]:
    answered = api.call("POST", f"/v1/indexes/{index}/query", json=body)
    assert answered.status_code == 400, answered.text
    found: dict[str, Any] = answered.json()["error"]
    return found


@pytest.mark.parametrize(("index", "method", "built_with"), [
    ("rag", "naive", "indexrag"),
    ("ext", "indexrag", "extractive"),
])
def test_a_method_that_cannot_read_the_index_is_a_400_naming_those_that_can(
        api: Api, llm: LlmTestServer, index: str, method: str, built_with: str) -> None:
    """naive reads passages, which an IndexRAG index does not hold; indexrag reads AKUs,
    which an extractive one does not: 400 invalid_input on field ``method``, naming the
    query methods that fit, and no LLM call made."""
    calls = llm.stats.count(Endpoint.CHAT)
    found = refusal(api, index, {"question": QUESTION, "method": method})
    fitting = fitting_queries(built_with)
    assert method not in fitting and built_with in fitting
    assert found["code"] == "invalid_input" and found["field"] == "method"
    assert f"methods that fit: {', '.join(fitting)}" in found["message"]
    assert llm.stats.count(Endpoint.CHAT) == calls


def test_the_fit_is_checked_before_the_options(api: Api) -> None:
    """Options for a method that cannot read the index: the answer is about the method."""
    found = refusal(api, "rag", {"question": QUESTION, "method": "naive",
                                 "options": {"anything": 1}})
    assert found["field"] == "method" and "methods that fit" in found["message"]


def test_every_fitting_method_and_the_default_answer(api: Api) -> None:
    """Without a method, an index answers with its method's default query method; the
    methods named as fitting are accepted (200)."""
    for index, built_with in (("rag", "indexrag"), ("ext", "extractive")):
        plain = api.call("POST", f"/v1/indexes/{index}/query", json={"question": QUESTION})
        assert plain.status_code == 200, plain.text
        assert plain.json()["method"] == default_query(built_with)
        for method in fitting_queries(built_with):
            answered = api.call("POST", f"/v1/indexes/{index}/query",
                                json={"question": QUESTION, "method": method})
            assert answered.status_code == 200, (index, method, answered.text)
