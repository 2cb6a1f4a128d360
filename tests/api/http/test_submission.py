"""Job submission with workers: the API only enqueues, so a POST answers 202 with the
job while no worker has touched it, several writes may be in flight at once, and
readiness checks the broker."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tests.api.http.conftest import Api, ApiFactory, sample_documents
from tests.redis_server import private_redis_server

pytestmark = pytest.mark.integration

@pytest.fixture(scope="module")
def broker_url() -> Iterator[str]:
    with private_redis_server() as url:
        yield url
        # Results subscribed to from the API's threads unsubscribe when collected: let
        # them, while this Redis still answers (the service closed before this runs).
        gc.collect()


def test_with_a_broker_writes_are_enqueued(broker_url: str, make_api: ApiFactory) -> None:
    """Two ingests in a row both answer 202 (no one-at-a-time slot with workers); their
    jobs wait for workers; readiness reports the broker. (The broker fixture comes first
    so Redis outlives the service.)"""
    api: Api = make_api(broker_url=broker_url)
    _, docs = sample_documents(limit=2)
    first = api.call("POST", "/v1/indexes/queued/documents", json=docs)
    second = api.call("POST", "/v1/indexes/queued/documents", json=docs[:1])
    assert (first.status_code, second.status_code) == (202, 202), second.text
    job = api.call("GET", f"/v1/jobs/{first.json()['job_id']}").json()
    assert job["state"] == "running" and job["counts"]["extractive.stage1"]["done"] == 0
    ready = api.call("GET", "/readyz", key=None).json()
    checks = ready["checks"]
    assert {k: checks.pop(k) for k in ("state", "events", "broker")} == {
        "state": "ok", "events": "ok", "broker": "ok"}
    # No worker owns the embedded engines yet, so queries could not be answered.
    assert ready["status"] == "unavailable" and "no engine owner" in checks["engines"]
