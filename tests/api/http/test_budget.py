"""LLM budgets over HTTP on a real server with the local test LLM (embedded: the job
runs in the server): an ingest's ``max_llm_tokens``/``max_cost`` query parameters, a
job paused on them and ``POST /v1/jobs/{id}/resume`` carrying it on, the index's
default budget (``GET/PUT/DELETE /v1/indexes/{name}/budget``), and every bad value
a 400 naming its field; each answer checked against the spec."""

from __future__ import annotations

from typing import Any

import pytest

from hopindex.testing.llm_server import LlmTestServer
from tests.api.http.conftest import (
    JOB_TIMEOUT_S,
    Api,
    ApiFactory,
    llm_settings_of,
    sample_documents,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def api(make_api: ApiFactory, llm: LlmTestServer) -> Api:
    return make_api(**llm_settings_of(llm), llm_price_input_per_mtok=1.0,
                    llm_price_output_per_mtok=2.0)


def _until(api: Api, job_id: str, state: str) -> dict[str, Any]:
    """The job once it is in ``state`` or has ended."""

    def reached() -> dict[str, Any] | None:
        job: dict[str, Any] = api.call("GET", f"/v1/jobs/{job_id}").json()
        if job["state"] == state or job["state"] in ("succeeded", "failed", "cancelled"):
            return job
        return None

    job = wait_until(reached, what=f"job {job_id} to reach {state}", timeout_s=JOB_TIMEOUT_S,
                     interval_s=0.05)
    assert job is not None  # wait_until returns a truthy value
    return job


def _chats(llm: LlmTestServer) -> int:
    return sum(llm.stats.by_kind.values())


def test_a_paused_ingest_resumes_through_the_api(api: Api, llm: LlmTestServer) -> None:
    """An ingest with max_llm_tokens=10 pauses before its first call: the job reads
    paused with the reason, the figures and its budget (as the spec says); resuming it
    is 200 with the job running under the new limit, and it then succeeds; resuming it
    again is a 409 naming job_id."""
    _, docs = sample_documents(limit=3)
    chats = _chats(llm)
    started = api.call("POST", "/v1/indexes/paused/documents",
                       params={"method": "indexrag", "max_llm_tokens": "10"}, json=docs)
    assert started.status_code == 202, started.text
    job_id = started.json()["job_id"]
    paused = _until(api, job_id, "paused")
    assert paused["state"] == "paused", paused
    assert paused["budget"] == {"max_llm_tokens": 10}
    assert paused["reason"].startswith("LLM budget is below the cost of one call")
    assert paused["pause"]["limits"] == {"max_llm_tokens": 10}
    assert paused["pause"]["next_call"]["tokens"] > 10 and paused["paused_at"]
    assert _chats(llm) == chats
    resumed = api.call("POST", f"/v1/jobs/{job_id}/resume",
                       json={"max_llm_tokens": 100_000_000, "max_cost": None})
    assert resumed.status_code == 200, resumed.text
    body = resumed.json()
    assert body["state"] == "running" and body["pause"] == {}
    assert body["budget"] == {"max_llm_tokens": 100_000_000}
    done = api.wait_job(job_id)
    assert done["state"] == "succeeded" and _chats(llm) > chats
    again = api.call("POST", f"/v1/jobs/{job_id}/resume")
    assert again.status_code == 409
    error = again.json()["error"]
    assert (error["code"], error["field"]) == ("job_not_paused", "job_id")
    assert error["message"] == (f"job {job_id} is succeeded, not paused; only a job paused "
                                "on its LLM budget resumes")
    assert api.call("POST", "/v1/jobs/no-such-job/resume").status_code == 404
    assert api.call("POST", f"/v1/jobs/{job_id}/resume", key="read").status_code == 403


@pytest.mark.parametrize(("params", "field"), [
    ({"max_llm_tokens": "-1"}, "max_llm_tokens"),
    ({"max_llm_tokens": "1.5"}, "max_llm_tokens"),
    ({"max_llm_tokens": "ten"}, "max_llm_tokens"),
    ({"max_llm_tokens": ""}, "max_llm_tokens"),
    ({"max_cost": "-0.5"}, "max_cost"),
    ({"max_cost": "NaN"}, "max_cost"),
    ({"max_cost": "1e400"}, "max_cost"),
    ({"max_cost": " 1"}, "max_cost"),
])
def test_bad_ingest_limits_are_a_400_naming_the_field(api: Api, params: dict[str, str],
                                                      field: str) -> None:
    """A negative, fractional, non-numeric, empty or infinite limit is refused before
    the body is read: 400 invalid_input naming the parameter, and no job or index."""
    _, docs = sample_documents(limit=1)
    refused = api.call("POST", "/v1/indexes/refused/documents", params=params, json=docs)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_input", field)
    assert api.service.list_jobs("refused") == []


@pytest.mark.parametrize(("body", "field"), [
    ({"max_llm_tokens": -1}, "max_llm_tokens"),
    ({"max_llm_tokens": 2.5}, "max_llm_tokens"),
    ({"max_llm_tokens": "100"}, "max_llm_tokens"),
    ({"max_llm_tokens": True}, "max_llm_tokens"),
    ({"max_cost": -1}, "max_cost"),
    ({"max_cost": "1"}, "max_cost"),
    ({"max_cost": 1, "limit": 2}, "limit"),
])
def test_bad_budget_bodies_are_a_400_naming_the_field(api: Api, body: dict[str, Any],
                                                      field: str) -> None:
    """The resume and index-budget bodies refuse what the spec refuses, naming the
    field, before looking the job or index up (never a 500)."""
    for method, path in (("POST", "/v1/jobs/no-such-job/resume"),
                         ("PUT", "/v1/indexes/paused/budget")):
        refused = api.call(method, path, json=body)
        assert refused.status_code == 400, (method, refused.text)
        assert refused.json()["error"]["field"] == field


def test_the_index_default_budget(api: Api) -> None:
    """GET shows no default, PUT replaces it whole (a limit left out or null is gone),
    an ingest's max_cost replaces that limit alone for its job and an ingest with
    none gets the default, DELETE removes it; an unknown index is a 404 on each, and a
    read key may look but not change it."""
    _, docs = sample_documents(limit=1, question=1)
    first = api.call("POST", "/v1/indexes/defaults/documents", json=docs)
    assert api.wait_job(first.json()["job_id"])["state"] == "succeeded"
    path = "/v1/indexes/defaults/budget"
    assert api.call("GET", path).json() == {"index": "defaults", "budget": {}}
    put = api.call("PUT", path, json={"max_llm_tokens": 50_000, "max_cost": 2})
    assert put.status_code == 200, put.text
    assert put.json() == {"index": "defaults",
                          "budget": {"max_llm_tokens": 50_000, "max_cost": 2.0}}
    assert api.call("GET", path, key="read").json() == put.json()
    assert api.call("PUT", path, key="read", json={}).status_code == 403

    job = api.call("POST", "/v1/indexes/defaults/documents", params={"max_cost": "0.5"},
                   json=docs)
    assert job.status_code == 202, job.text
    assert job.json()["budget"] == {"max_llm_tokens": 50_000, "max_cost": 0.5}
    api.wait_job(job.json()["job_id"])
    plain = api.call("POST", "/v1/indexes/defaults/documents", json=docs).json()
    assert plain["budget"] == {"max_llm_tokens": 50_000, "max_cost": 2.0}
    api.wait_job(plain["job_id"])

    replaced = api.call("PUT", path, json={"max_cost": 3, "max_llm_tokens": None})
    assert replaced.json()["budget"] == {"max_cost": 3.0}
    assert api.call("DELETE", path).status_code == 204
    assert api.call("GET", path).json()["budget"] == {}
    for method in ("GET", "PUT", "DELETE"):
        missing = api.call(method, "/v1/indexes/nosuch/budget",
                           json={} if method == "PUT" else None)
        assert missing.status_code == 404, (method, missing.text)


def test_a_cost_limit_needs_prices_on_the_server(make_api: ApiFactory) -> None:
    """A server with no LLM prices cannot count money: a max_cost on an ingest, an index
    default or a resume is a 422 not_configured naming max_cost (what the server is not
    set up for), and no job starts; a token limit is taken."""
    unpriced = make_api()
    _, docs = sample_documents(limit=1)
    for method, path, kwargs in (
            ("POST", "/v1/indexes/cheap/documents",
             {"params": {"max_cost": "1"}, "json": docs}),
            ("PUT", "/v1/indexes/cheap/budget", {"json": {"max_cost": 1}}),
            ("POST", "/v1/jobs/no-such-job/resume", {"json": {"max_cost": 1}})):
        refused = unpriced.call(method, path, **kwargs)
        assert refused.status_code == 422, (path, refused.text)
        error = refused.json()["error"]
        assert (error["code"], error["field"]) == ("not_configured", "max_cost")
    assert unpriced.service.list_jobs("cheap") == []
    taken = unpriced.call("POST", "/v1/indexes/cheap/documents",
                          params={"max_llm_tokens": "5"}, json=docs)
    assert taken.status_code == 202, taken.text
    assert unpriced.wait_job(taken.json()["job_id"])["budget"] == {"max_llm_tokens": 5}
