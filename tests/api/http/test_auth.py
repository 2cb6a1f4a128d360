"""Authentication and isolation on a real server: no key or a wrong key is a 401, a
read-only key writing or a key used on another index is a 403, a scoped key sees
only its indexes, public routes need no key, and keys never reach the log."""

from __future__ import annotations

import pytest
import structlog

from hopindex.core.events import EventType
from tests.api.http.conftest import KEYS, SCOPED_INDEX, Api, ApiFactory

pytestmark = pytest.mark.integration

OTHER_INDEX = "tenant-b"
QUERY = {"question": "anything at all"}
DOC = [{"title": "T", "text": "Some text."}]


@pytest.fixture(scope="module")
def auth_api(make_api: ApiFactory) -> Api:
    api = make_api(log_level="INFO")
    for name in (SCOPED_INDEX, OTHER_INDEX):
        assert api.call("POST", "/v1/indexes", json={"name": name}).status_code == 201
    api.service.backends.events.append_event(EventType.JOB_PROGRESS, OTHER_INDEX, "j", {})
    return api


@pytest.mark.parametrize(("key", "method", "path", "body", "status"), [
    # No key, a wrong key, a malformed header: 401 everywhere a key is needed.
    (None, "GET", "/v1/indexes", None, 401),
    (None, "POST", f"/v1/indexes/{OTHER_INDEX}/query", QUERY, 401),
    ("wrong-key-0123456789abcdef", "GET", "/v1/jobs", None, 401),
    ("x" * 600, "GET", "/v1/jobs", None, 401),
    # A read-only key reads and queries, but writes nothing.
    ("read", "POST", f"/v1/indexes/{OTHER_INDEX}/query", QUERY, 200),
    ("read", "GET", f"/v1/indexes/{OTHER_INDEX}", None, 200),
    ("read", "POST", f"/v1/indexes/{OTHER_INDEX}/documents", [{"text": "t"}], 403),
    # ... except a dry run, which writes nothing; one that could be read two ways is not.
    ("read", "POST", f"/v1/indexes/{OTHER_INDEX}/documents?dry_run=true", DOC, 200),
    ("read", "POST", f"/v1/indexes/{OTHER_INDEX}/documents?dry_run=true&dry_run=false",
     DOC, 403),
    ("read", "POST", f"/v1/indexes/{OTHER_INDEX}/documents?dry_run=false", DOC, 403),
    ("read", "POST", f"/v1/indexes/{OTHER_INDEX}/documents?dry_run=false&dry_run=true",
     DOC, 403),
    ("read", "DELETE", f"/v1/indexes/{OTHER_INDEX}/documents", {"ids": ["d"]}, 403),
    ("read", "POST", "/v1/indexes", {"name": "made-by-reader"}, 403),
    ("read", "DELETE", f"/v1/indexes/{OTHER_INDEX}", None, 403),
    ("read", "POST", "/v1/webhooks", {"index": OTHER_INDEX, "url": "http://h/x"}, 403),
    # A key for one index is refused on another, wherever the index is named.
    ("scoped", "POST", f"/v1/indexes/{OTHER_INDEX}/query", QUERY, 403),
    ("scoped", "GET", f"/v1/indexes/{OTHER_INDEX}", None, 403),
    ("scoped", "POST", f"/v1/indexes/{OTHER_INDEX}/documents", [{"text": "t"}], 403),
    ("scoped", "POST", f"/v1/indexes/{OTHER_INDEX}/documents?dry_run=true", DOC, 403),
    ("scoped", "POST", "/v1/indexes", {"name": "not-mine"}, 403),
    ("scoped", "GET", "/v1/jobs?index=tenant-b", None, 403),
    ("scoped", "GET", "/v1/events?index=tenant-b&mode=backlog", None, 403),
    ("scoped", "GET", "/v1/events?mode=backlog", None, 403),
    ("scoped", "POST", "/v1/webhooks", {"index": OTHER_INDEX, "url": "http://h/x"}, 403),
    ("scoped", "POST", f"/v1/indexes/{SCOPED_INDEX}/query", QUERY, 200),
    ("scoped", "GET", f"/v1/events?index={SCOPED_INDEX}&mode=backlog", None, 200),
    # Probes, metrics and the spec are public.
    (None, "GET", "/healthz", None, 200),
    (None, "GET", "/v1/openapi.json", None, 200),
])
def test_access_matrix(auth_api: Api, key: str | None, method: str, path: str,
                       body: object, status: int) -> None:
    """Each (key, request) pair gets the status its access and index scope allow; every
    refusal is JSON with a code and a message saying what is missing. Nothing a read
    key sends writes: its dry runs leave no job."""
    response = auth_api.call(method, path, key=key, json=body)
    if key == "read":
        assert auth_api.service.list_jobs(OTHER_INDEX) == []
    assert response.status_code == status, response.text
    if status == 401:
        assert response.json()["error"]["code"] == "unauthenticated"
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    if status == 403:
        assert response.json()["error"]["code"] == "forbidden"


def test_scoped_key_lists_only_its_indexes_and_jobs(auth_api: Api) -> None:
    """Listing with a key for one index shows that index only, and no other index's jobs."""
    indexes = auth_api.call("GET", "/v1/indexes", key="scoped").json()["indexes"]
    assert [i["name"] for i in indexes] == [SCOPED_INDEX]
    everything = auth_api.call("GET", "/v1/indexes", key="read").json()["indexes"]
    assert {SCOPED_INDEX, OTHER_INDEX} <= {i["name"] for i in everything}
    jobs = auth_api.call("GET", "/v1/jobs", key="scoped").json()["jobs"]
    assert all(j["index"] == SCOPED_INDEX for j in jobs)


def test_job_of_another_index_is_forbidden(auth_api: Api) -> None:
    """A job is reachable by id only with a key covering its index."""
    job = auth_api.call("POST", f"/v1/indexes/{OTHER_INDEX}/documents",
                        json=[{"id": "d1", "title": "T", "text": "Some text about Paris."}])
    assert job.status_code == 202, job.text
    job_id = job.json()["job_id"]
    assert auth_api.call("GET", f"/v1/jobs/{job_id}", key="scoped").status_code == 403
    assert auth_api.call("POST", f"/v1/jobs/{job_id}/cancel", key="scoped").status_code == 403
    assert auth_api.call("GET", f"/v1/jobs/{job_id}", key="read").status_code == 200
    auth_api.wait_job(job_id)


def test_keys_never_reach_the_log(auth_api: Api) -> None:
    """Requests with right and wrong keys are logged by key name only."""
    with structlog.testing.capture_logs() as entries:
        auth_api.call("GET", "/v1/indexes", key="write")
        auth_api.call("GET", "/v1/indexes", key="wrong-key-0123456789abcdef")
    requests_logged = [e for e in entries if e["event"] == "http_request"]
    assert [e["key"] for e in requests_logged] == ["env-1", None]
    logged = repr(entries)
    for secret in (*KEYS.values(), "wrong-key-0123456789abcdef"):
        assert secret not in logged
