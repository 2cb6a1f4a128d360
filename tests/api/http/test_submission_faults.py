"""Over HTTP (embedded: the job runs on the server's background thread) a fault while a
job is planned answers JSON, never leaves the job running, and does not block deleting
the index; hostile records and unknown ids are answered as other bad input is."""

from __future__ import annotations

from typing import Any

import pytest
import requests

import hopindex.scheduler.submit as submit
from tests.api.http.conftest import Api, sample_documents

pytestmark = pytest.mark.integration

NDJSON = {"Content-Type": "application/x-ndjson"}
BAD_METADATA = '{"id": "bad", "text": "Some text.", "metadata": {"author": "\\ud800"}}'


class InjectedError(RuntimeError):
    """A fault that is not a HopindexError, like a bug or a driver's error."""


def _raise_once(monkeypatch: pytest.MonkeyPatch, target: Any, attribute: str) -> None:
    original = getattr(target, attribute)
    fired: list[bool] = []

    def faulty(*args: Any, **kwargs: Any) -> Any:
        if not fired:
            fired.append(True)
            raise InjectedError(f"injected at {attribute}")
        return original(*args, **kwargs)

    monkeypatch.setattr(target, attribute, faulty)


def _jobs(api: Api, index: str) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = api.call("GET", "/v1/jobs", params={"index": index}).json()[
        "jobs"]
    return jobs


def _error(response: requests.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    error: dict[str, Any] = response.json()["error"]
    return error


@pytest.mark.parametrize("attribute", ["put_documents", "create_job"])
def test_a_fault_once_the_job_exists_answers_the_failed_job(
        api: Api, monkeypatch: pytest.MonkeyPatch, attribute: str) -> None:
    """The answer is the job (whatever the timing), which ends failed naming the fault;
    no job of the index is left running, so the index can be deleted."""
    index = f"fault-{attribute.replace('_', '-')}"
    _, docs = sample_documents(limit=2)
    api.call("POST", f"/v1/indexes/{index}/documents", json=docs[:1])  # the index exists
    api.wait_job(_jobs(api, index)[0]["job_id"])
    _raise_once(monkeypatch, api.service.backends.state, attribute)
    response = api.call("POST", f"/v1/indexes/{index}/documents", json=docs)
    if attribute == "create_job":
        # No job record was written: the error is the answer, as JSON.
        assert _error(response, 500)["code"] == "internal"
    else:
        assert response.status_code == 202, response.text
        job = api.wait_job(response.json()["job_id"])
        assert job["state"] == "failed"
        assert f"injected at {attribute}" in job["reason"]
    assert all(j["state"] not in ("queued", "running") for j in _jobs(api, index))
    assert api.call("DELETE", f"/v1/indexes/{index}").status_code == 204


def test_a_fault_in_a_control_callback_fails_the_job(api: Api,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A chord callback raising inside the background run fails the job with the reason."""
    from hopindex.scheduler.task_names import AFTER_PHASE
    from hopindex.workers.app import app

    index = "fault-callback"
    _raise_once(monkeypatch, app.tasks[AFTER_PHASE], "run")
    _, docs = sample_documents(limit=2)
    response = api.call("POST", f"/v1/indexes/{index}/documents", json=docs)
    assert response.status_code == 202, response.text
    job = api.wait_job(response.json()["job_id"])
    assert job["state"] == "failed" and "injected at run" in job["reason"]
    assert api.call("DELETE", f"/v1/indexes/{index}").status_code == 204


def test_a_fault_before_the_job_exists_is_a_json_error(api: Api,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault in the index check: a JSON 500 with a request id, and no job at all."""
    _raise_once(monkeypatch, submit, "ensure_index")
    _, docs = sample_documents(limit=1)
    error = _error(api.call("POST", "/v1/indexes/fault-early/documents", json=docs), 500)
    assert error["code"] == "internal" and error["request_id"]
    assert _jobs(api, "fault-early") == []


def test_a_body_of_unstorable_records_only_is_a_400_naming_the_field(api: Api) -> None:
    """Like any body of bad records only: 400 naming line and field, nothing submitted."""
    error = _error(api.call("POST", "/v1/indexes/hostile/documents", data=BAD_METADATA + "\n",
                            headers=NDJSON, params={"on_error": "skip"}), 400)
    assert error["code"] == "invalid_document"
    assert (error["line"], error["field"]) == (1, "metadata.author")
    assert "surrogate" in error["message"]
    assert _jobs(api, "hostile") == []


def test_skip_mode_ingests_the_good_records_and_lists_the_unstorable_one(api: Api) -> None:
    """on_error=skip: the good record is ingested; the bad one is a validation error on
    the job naming its line and field; the job succeeds."""
    good = '{"id": "good", "title": "Warsaw", "text": "Warsaw is the capital of Poland."}'
    response = api.call("POST", "/v1/indexes/hostile-skip/documents",
                        data=f"{good}\n{BAD_METADATA}\n", headers=NDJSON,
                        params={"on_error": "skip"})
    assert response.status_code == 202, response.text
    job = api.wait_job(response.json()["job_id"])
    assert job["state"] == "succeeded", job["reason"]
    assert [(e["stage"], e["where"]) for e in job["errors"]] == [
        ("validate", "body.jsonl:2:metadata.author")]
    assert job["counts"]["extractive.stage1"]["done"] == 1


def test_deleting_only_unknown_ids_succeeds_listing_them(api: Api) -> None:
    """202, and the job succeeds with each unknown id as a validation error."""
    _, docs = sample_documents(limit=1)
    first = api.call("POST", "/v1/indexes/ghosts/documents", json=docs)
    api.wait_job(first.json()["job_id"])
    response = api.call("DELETE", "/v1/indexes/ghosts/documents",
                        json={"ids": ["ghost-2", "ghost-1"]})
    assert response.status_code == 202, response.text
    job = api.wait_job(response.json()["job_id"])
    assert job["state"] == "succeeded", job["reason"]
    assert [e["item"] for e in job["errors"]] == ["ghost-1", "ghost-2"]


def test_an_unstorable_id_to_delete_is_a_400_naming_it(api: Api) -> None:
    """An id holding an unpaired surrogate escape is refused naming its position."""
    error = _error(api.call("DELETE", "/v1/indexes/ghosts/documents",
                            data='{"ids": ["fine", "bad\\ud800"]}',
                            headers={"Content-Type": "application/json"}), 400)
    assert error["field"] == "ids[1]" and "surrogate" in error["message"]
