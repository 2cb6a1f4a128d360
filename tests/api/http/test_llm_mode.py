"""LLM modes over HTTP on a real server with the local test LLM (embedded: jobs run in
the server): ``llm_mode`` on ingest, repair and rebuild, the index's default mode
(``GET/PUT/DELETE /v1/indexes/{name}/llm-mode``), a bad value a 400 naming the field,
a job's provider batches in its JSON, and a dry run's cost at both prices; each answer
checked against the spec."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from hopindex.core.models import JobState
from hopindex.core.provider_batches import BatchState, ProviderBatch
from hopindex.core.settings import LlmMode
from hopindex.testing.contracts.state_records import new_job
from hopindex.testing.llm_server import LlmTestServer
from tests.api.http.conftest import Api, ApiFactory, llm_settings_of, sample_documents
from tests.plugin_method.fixtures import sentences_plugin  # noqa: F401  # a fixture

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def api(make_api: ApiFactory, llm: LlmTestServer) -> Api:
    return make_api(**llm_settings_of(llm), llm_price_input_per_mtok=1.0,
                    llm_price_output_per_mtok=2.0)


def _accepted(api: Api, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    """The job a 202 carries, once it has ended."""
    answer = api.call(method, path, **kwargs)
    assert answer.status_code == 202, answer.text
    return api.wait_job(answer.json()["job_id"])


def test_jobs_run_in_the_mode_given_else_the_indexs_default(api: Api) -> None:
    """An ingest with llm_mode=batch runs in batch; the index then has no default of its
    own (its jobs run in the server's, sync); PUT sets batch, which an ingest and a
    repair naming none then run in while repair?llm_mode=sync runs in sync; a read key
    may look, not change it; PUT null and DELETE remove it; an unknown index is a 404."""
    _, docs = sample_documents(limit=2, question=2)
    ingest = "/v1/indexes/modes/documents"
    first = _accepted(api, "POST", ingest, params={"method": "extractive",
                                                   "llm_mode": "batch"}, json=docs)
    assert (first["llm_mode"], first["state"]) == ("batch", "succeeded")
    path = "/v1/indexes/modes/llm-mode"
    assert api.call("GET", path).json() == {"index": "modes", "llm_mode": None,
                                            "effective": "sync"}
    put = api.call("PUT", path, json={"llm_mode": "batch"})
    assert put.status_code == 200, put.text
    assert put.json() == {"index": "modes", "llm_mode": "batch", "effective": "batch"}
    assert api.call("GET", path, key="read").json() == put.json()
    assert api.call("PUT", path, key="read", json={"llm_mode": "sync"}).status_code == 403
    assert _accepted(api, "POST", ingest, json=docs)["llm_mode"] == "batch"
    assert _accepted(api, "POST", "/v1/indexes/modes/repair")["llm_mode"] == "batch"
    assert _accepted(api, "POST", "/v1/indexes/modes/repair",
                     params={"llm_mode": "sync"})["llm_mode"] == "sync"
    assert api.call("PUT", path, json={"llm_mode": None}).json()["llm_mode"] is None
    api.call("PUT", path, json={"llm_mode": "batch"})
    assert api.call("DELETE", path).status_code == 204
    assert api.call("GET", path).json()["effective"] == "sync"
    for method in ("GET", "PUT", "DELETE"):
        missing = api.call(method, "/v1/indexes/nosuch/llm-mode",
                           json={"llm_mode": "batch"} if method == "PUT" else None)
        assert missing.status_code == 404, (method, missing.text)


@pytest.mark.parametrize(("method", "path", "kwargs"), [
    ("POST", "/v1/indexes/refused/documents", {"params": {"llm_mode": "fast"}}),
    ("POST", "/v1/indexes/refused/documents", {"params": {"llm_mode": "Batch",
                                                          "dry_run": "true"}}),
    ("POST", "/v1/indexes/refused/repair", {"params": {"llm_mode": "later"}}),
    ("POST", "/v1/indexes/refused/rebuild", {"params": {"llm_mode": ""}}),
    ("PUT", "/v1/indexes/refused/llm-mode", {"json": {"llm_mode": "fast"}}),
    ("PUT", "/v1/indexes/refused/llm-mode", {"json": {"llm_mode": 1}}),
])
def test_a_value_that_is_no_mode_is_a_400_naming_the_field(
        api: Api, method: str, path: str, kwargs: dict[str, Any]) -> None:
    """Refused before anything is read or started, as the other doors refuse it: a 400
    on field llm_mode whose message lists the modes; no job, no index."""
    _, docs = sample_documents(limit=1)
    refused = api.call(method, path, **({"json": docs} | kwargs))
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_input", "llm_mode")
    assert error["message"].startswith("llm_mode: must be one of sync, batch, got ")
    assert api.service.list_jobs("refused") == []
    assert api.service.index_info("refused") is None


def test_a_jobs_json_shows_its_mode_and_provider_batches(api: Api) -> None:
    """A job waiting on the provider reads so, with llm_mode batch and each batch's id,
    phase, state and counts (as the spec's ProviderBatch says), not its requests' keys
    or the tasks waiting for it; the job list shows it alike."""
    job = new_job("waiting")
    job.state = JobState.WAITING_ON_PROVIDER
    job.llm_mode = LlmMode.BATCH
    job.provider_batches = [
        ProviderBatch(token="t1", phase="indexrag.stage1", keys=["k1", "k2", "k3"],
                      tasks=["task-1"], batch_id="batch_1", state=BatchState.IN_PROGRESS,
                      total=3, completed=2, submitted_at=time.time()),
        ProviderBatch(token="t2", phase="indexrag.stage2", keys=["k4"])]
    api.service.backends.state.create_job(job)
    shown = api.call("GET", f"/v1/jobs/{job.job_id}", key="read").json()
    assert (shown["state"], shown["llm_mode"]) == ("waiting_on_provider", "batch")
    first, second = shown["provider_batches"]
    assert {k: first[k] for k in ("batch_id", "phase", "state", "total", "completed",
                                  "failed")} == {
        "batch_id": "batch_1", "phase": "indexrag.stage1", "state": "in_progress",
        "total": 3, "completed": 2, "failed": 0}
    assert (second["batch_id"], second["state"], second["total"]) == ("", "submitting", 1)
    assert not {"keys", "tasks", "token"} & set(first)
    listed = api.call("GET", "/v1/jobs", params={"index": "waiting"}).json()["jobs"]
    assert listed[0]["provider_batches"] == shown["provider_batches"]


def test_a_dry_run_prices_both_modes_and_says_which_the_job_would_run_in(api: Api) -> None:
    """With prices set, the plan's llm_cost is the phases' cost in all at the synchronous
    prices and at the batch price (50% off by default), whatever the mode; llm_mode is
    the request's, else the index's default, else the server's, with where it came
    from; nothing is written."""
    _, docs = sample_documents(limit=3, question=3)
    params = {"method": "indexrag", "dry_run": "true"}
    plan = api.call("POST", "/v1/indexes/priced/documents",
                    params={**params, "llm_mode": "batch"}, json=docs).json()
    assert (plan["llm_mode"], plan["llm_mode_from"]) == ("batch", "request")
    cost = plan["llm_cost"]
    priced = [p["cost"] for p in plan["phases"] if p["cost"] is not None]
    assert priced and cost["sync"] == pytest.approx(sum(priced))
    assert cost["batch"] == pytest.approx(cost["sync"] * 0.5)
    assert cost["batch_discount"] == 0.5
    assert cost["left_out"] == [p["phase"] for p in plan["phases"] if p["cost"] is None]
    plain = api.call("POST", "/v1/indexes/priced/documents", params=params, json=docs).json()
    assert (plain["llm_mode"], plain["llm_mode_from"]) == ("sync", "settings")
    assert plain["llm_cost"] == cost
    assert api.service.index_info("priced") is None


def test_a_rebuild_takes_the_mode(make_api: ApiFactory,
                                  sentences_plugin: Path) -> None:  # noqa: F811
    """POST rebuild?llm_mode=batch starts a rebuild job in batch mode (the test plugin's
    tree is built on request; it calls no LLM)."""
    api = make_api()
    docs = [{"id": "a", "title": "Alpha", "text": "Paris is in France. The city is old."},
            {"id": "b", "title": "Beta", "text": "The river is the Seine. Paris lies on it."}]
    built = _accepted(api, "POST", "/v1/indexes/lazy/documents",
                      params={"method": "lazy_sentences"}, json=docs)
    assert (built["state"], built["llm_mode"]) == ("succeeded", "sync")
    rebuilt = _accepted(api, "POST", "/v1/indexes/lazy/rebuild", params={"llm_mode": "batch"})
    assert (rebuilt["kind"], rebuilt["llm_mode"]) == ("rebuild", "batch")
