"""``POST /v1/indexes/{name}/query`` on a real server: the answer carries the embedder's
load apart from the query's latency, and a warning when the index is partial, each as
the published spec describes it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hopindex.core.models import FailedItem
from tests.api.http.conftest import Api, ApiFactory, sample_documents

pytestmark = pytest.mark.integration

INDEX = "status"
PARTIAL = "status-partial"


@pytest.fixture(scope="module")
def api(make_api: ApiFactory) -> Api:
    """A server with two copies of four sample paragraphs, one of them partial (as a
    job that died before finalizing and a failed stage-2 item leave an index)."""
    api = make_api()
    _, docs = sample_documents(limit=4)
    for index in (INDEX, PARTIAL):
        job = api.call("POST", f"/v1/indexes/{index}/documents", json=docs)
        assert api.wait_job(job.json()["job_id"])["state"] == "succeeded"
    state = api.service.backends.state
    [doc] = api.service.get_documents(PARTIAL, [sorted(state.document_hashes(PARTIAL))[0]])
    state.put_documents([replace(doc, content_hash="")])
    state.put_failed_items(PARTIAL, [FailedItem(phase="extractive.stage2", item="x",
                                                reason="test", job_id="j")])
    return api


def test_the_spec_describes_the_load_and_the_warnings(api: Api) -> None:
    """Both fields are required in QueryResult, with the warning's shape of its own."""
    schemas = api.spec.raw_schema["components"]["schemas"]
    result = schemas["QueryResult"]
    assert {"embedder_load_s", "warnings", "latency_s"} <= set(result["required"])
    assert schemas["QueryWarning"]["required"] == ["code", "message"]


def test_a_partial_index_answers_200_with_its_warning(api: Api) -> None:
    """Ready: no warning. Partial: 200 with the passages and one ``index_partial``
    warning naming the repair; both answers conform to the spec."""
    question, _ = sample_documents(limit=4)
    ready = api.call("POST", f"/v1/indexes/{INDEX}/query", key="read",
                     json={"question": question})
    assert ready.status_code == 200, ready.text
    assert ready.json()["warnings"] == []
    assert ready.json()["embedder_load_s"] >= 0.0

    partial = api.call("POST", f"/v1/indexes/{PARTIAL}/query", key="read",
                       json={"question": question})
    assert partial.status_code == 200, partial.text
    body = partial.json()
    assert body["passages"]
    [warning] = body["warnings"]
    assert warning["code"] == "index_partial"
    assert f"index {PARTIAL!r} is partial" in warning["message"]
    assert f"POST /v1/indexes/{PARTIAL}/repair" in warning["message"]
