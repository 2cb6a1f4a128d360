"""``POST /v1/indexes/{name}/rebuild`` and the build state of trees built on request in
``GET /v1/indexes/{name}``, on a real loopback server with the test plugin's
``lazy_sentences`` method (its tree is built on request). Every answer is checked
against the OpenAPI spec the server publishes."""

from __future__ import annotations

import time
from typing import Any

import pytest

from hopindex.core.models import Job, JobKind, JobState
from tests.api.http.conftest import Api, ApiFactory
from tests.plugin_method.fixtures import sentences_plugin  # noqa: F401  # a fixture

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sentences_plugin")]

DOCS = [{"id": "a", "title": "Alpha", "text": "Paris is in France. The city is old."},
        {"id": "b", "title": "Beta", "text": "The river is the Seine. Paris lies on it."},
        {"id": "c", "title": "Gamma", "text": "Rivers flow. The sea is far."}]


def _ingest(api: Api, index: str, docs: list[dict[str, str]], method: str) -> None:
    accepted = api.call("POST", f"/v1/indexes/{index}/documents", params={"method": method},
                        json=docs)
    assert accepted.status_code == 202, accepted.text
    assert api.wait_job(accepted.json()["job_id"])["state"] == "succeeded"


def _tree(api: Api, index: str) -> dict[str, Any]:
    described = api.call("GET", f"/v1/indexes/{index}", key="read")
    assert described.status_code == 200, described.text
    [level] = described.json()["levels"]
    assert level["phase"] == "lazy_sentences.tree"
    return dict(level)


def test_rebuild_builds_the_stale_tree_and_is_refused_where_it_cannot_run(
        make_api: ApiFactory) -> None:
    """A second ingest changing one document leaves the tree stale (the index says so,
    with the count and share); POST rebuild answers 202 with a rebuild job, after which
    the tree reads current. An index whose method builds no tree on request gets a 400
    naming the method, an index with a running job a 409, an unknown index a 404."""
    api = make_api()
    _ingest(api, "lazy", DOCS, "lazy_sentences")
    built = _tree(api, "lazy")
    assert (built["state"], built["stale"], built["changed_since_build"]) == (
        "current", False, 0)
    changed = [DOCS[0], {**DOCS[1], "text": "The river is the Marne. Paris lies on it."},
               DOCS[2]]
    _ingest(api, "lazy", changed, "lazy_sentences")
    stale = _tree(api, "lazy")
    assert (stale["state"], stale["stale"], stale["changed_since_build"]) == ("stale", True, 1)
    assert stale["changed_share"] == pytest.approx(0.3333)
    assert stale["built_at"] == built["built_at"]

    accepted = api.call("POST", "/v1/indexes/lazy/rebuild")
    assert accepted.status_code == 202, accepted.text
    job = accepted.json()
    assert job["kind"] == "rebuild" and accepted.headers["Location"] == f"/v1/jobs/{job['job_id']}"
    assert api.wait_job(job["job_id"])["state"] == "succeeded"
    rebuilt = _tree(api, "lazy")
    assert (rebuilt["state"], rebuilt["built_by"]) == ("current", job["job_id"])

    _ingest(api, "plain", DOCS, "sentences")
    assert api.call("GET", "/v1/indexes/plain").json()["levels"] == []
    refused = api.call("POST", "/v1/indexes/plain/rebuild")
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["code"] == "invalid_input" and error["field"] == "method"
    assert "built with 'sentences'" in error["message"]

    state = api.service.backends.state
    state.create_job(Job(job_id="held", index="lazy", kind=JobKind.INGEST,
                         state=JobState.RUNNING, started_at=time.time()))
    try:
        busy = api.call("POST", "/v1/indexes/lazy/rebuild")
        assert busy.status_code == 409 and busy.json()["error"]["code"] == "index_busy"
        assert "held" in busy.json()["error"]["message"]
    finally:
        state.update_job("held", lambda j: setattr(j, "state", JobState.FAILED))
    assert api.call("POST", "/v1/indexes/nothing-here/rebuild").status_code == 404
