"""Limits and validation on a real server with small limits: oversize and malformed
bodies, too many documents, long queries, k bounds, media types, timeouts. Every 4xx
is JSON naming the field or the line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
import requests
import structlog

from hopindex.api.http.keys import KeyRing
from hopindex.api.http.server import BackgroundServer
from hopindex.api.service import Hopindex
from tests.api.http.conftest import KEYS, Api, ApiFactory

pytestmark = pytest.mark.integration

INDEX = "limits"
NDJSON = {"Content-Type": "application/x-ndjson"}


@pytest.fixture(scope="module")
def small(make_api: ApiFactory) -> Api:
    return make_api(api_max_body_bytes=4000, api_max_documents=3, api_max_query_chars=50,
                    max_document_bytes=300)


def error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    found: dict[str, Any] = response.json()["error"]
    assert found["code"] and found["message"] and found["request_id"]
    return found


def test_body_over_the_limit_is_413_declared_or_streamed(small: Api) -> None:
    """A body over HOPINDEX_API_MAX_BODY_BYTES is refused whether its Content-Length says
    so or it arrives chunked without one."""
    big = json.dumps([{"text": "x" * 200}] * 30)
    declared = small.call("POST", f"/v1/indexes/{INDEX}/documents", data=big,
                          headers={"Content-Type": "application/json"})
    assert error(declared, 413)["code"] == "body_too_large"

    def chunks() -> Iterator[bytes]:
        for _ in range(10):
            yield b'{"text": "' + b"y" * 1000 + b'"}\n'

    streamed = small.call("POST", f"/v1/indexes/{INDEX}/documents", data=chunks(),
                          headers=NDJSON)
    assert error(streamed, 413)["code"] == "body_too_large"


def test_malformed_ndjson_names_the_line_and_skip_mode_ingests_the_rest(small: Api) -> None:
    """A bad line makes the default (reject) mode a 400 naming line and file, listing every
    bad record; on_error=skip ingests the good lines and the job names the bad one."""
    body = '{"id": "a", "text": "Alpha text."}\n{"id": "b", "text": \n{"id": "c"}\n'
    refused = error(small.call("POST", f"/v1/indexes/{INDEX}/documents", data=body,
                               headers=NDJSON), 400)
    assert refused["code"] == "invalid_document"
    assert refused["line"] == 2 and refused["file"] == "body.jsonl"
    assert refused["message"].startswith("body.jsonl:2: invalid JSON")
    assert [(e["line"], e.get("field")) for e in refused["errors"]] == [(2, None), (3, "text")]
    assert refused["error_count"] == 2

    accepted = small.call("POST", f"/v1/indexes/{INDEX}/documents", data=body, headers=NDJSON,
                          params={"on_error": "skip"})
    assert accepted.status_code == 202, accepted.text
    job = small.wait_job(accepted.json()["job_id"])
    assert job["counts"]["extractive.stage1"]["done"] == 1
    assert [e["where"] for e in job["errors"]] == ["body.jsonl:2", "body.jsonl:3:text"]


def test_malformed_json_body_names_line_and_record_field(small: Api) -> None:
    """Invalid JSON is a 400 with its line; a record without text names the record and field;
    an oversize document names its record and the variable that sets the limit."""
    syntax = error(small.call("POST", f"/v1/indexes/{INDEX}/documents",
                              data='[\n{"text": "a"},\n{"text" "b"}\n]',
                              headers={"Content-Type": "application/json"}), 400)
    assert syntax["line"] == 3 and "invalid JSON" in syntax["message"]
    missing = error(small.call("POST", f"/v1/indexes/{INDEX}/documents",
                               json=[{"text": "fine"}, {"title": "no text"}]), 400)
    assert missing["record"] == 1 and missing["field"] == "text"
    oversize = error(small.call("POST", f"/v1/indexes/{INDEX}/documents",
                                json=[{"id": "big", "text": "z" * 400}]), 400)
    assert "over HOPINDEX_MAX_DOCUMENT_BYTES=300" in oversize["message"]
    assert oversize["record"] == 0


def test_too_many_documents_and_ids(small: Api) -> None:
    """More records than HOPINDEX_API_MAX_DOCUMENTS, or more ids to delete, is a 413."""
    many = [{"id": str(i), "text": "t"} for i in range(4)]
    assert error(small.call("POST", f"/v1/indexes/{INDEX}/documents", json=many),
                 413)["code"] == "too_many_documents"
    ids = error(small.call("DELETE", f"/v1/indexes/{INDEX}/documents",
                           json={"ids": ["1", "2", "3", "4"]}), 413)
    assert ids["field"] == "ids"


def test_multipart_upload_and_unsafe_names(small: Api) -> None:
    """Files upload as multipart and are read by suffix (a folder path becomes a text
    document's id); names that climb out of the upload folder are refused."""
    files = [("file", ("notes/a.md", b"Alpha lives in Paris.")),
             ("file", ("b.jsonl", b'{"id": "b", "text": "Beta lives in Rome."}\n'))]
    accepted = small.call("POST", "/v1/indexes/uploads/documents", files=files)
    assert accepted.status_code == 202, accepted.text
    assert small.wait_job(accepted.json()["job_id"])["state"] == "succeeded"
    docs = small.service.get_documents("uploads", ["notes/a.md", "b"])
    assert sorted(d.doc_id for d in docs) == ["b", "notes/a.md"]
    for name in ("../x.jsonl", "a/../../x.jsonl", ".hidden.jsonl", "x[1].jsonl"):
        bad = small.call("POST", "/v1/indexes/uploads/documents",
                         files=[("file", (name, b'{"text": "t"}'))])
        assert error(bad, 400)["field"] == "file"
    for framing in (b"no boundary at all", b'--abc\r\nContent-Disposition: form-data; '
                    b'name="file"; filename="a.jsonl"\r\n\r\n{"text": "cut short"}'):
        broken = small.call("POST", "/v1/indexes/uploads/documents", data=framing,
                            headers={"Content-Type": "multipart/form-data; boundary=abc"})
        assert error(broken, 400)["message"].startswith("malformed multipart body")


@pytest.mark.parametrize(("body", "field"), [
    ({"question": "q" * 51}, "question"),
    ({"question": "   "}, "question"),
    ({"question": "ok", "k": 0}, "k"),
    ({"question": "ok", "k": 101}, "k"),
    ({"question": "ok", "k": "5"}, "k"),
    ({"question": "ok", "k": True}, "k"),
    ({"question": "ok", "k": 10, "candidates": 0}, "candidates"),
    ({"question": "ok", "k": 2.5}, "k"),
    ({"question": "ok", "fusion": "sum"}, "fusion"),
    ({"question": "ok", "method": "nonsense"}, "method"),
    ({"question": "ok", "options": {"alpha": [1]}}, "options.alpha"),
    ({"question": "ok", "dense_weight": -1}, "dense_weight"),
    ({"question": "ok", "dense_weight": 0, "keyword_weight": 0}, "dense_weight"),
    ({"question": "ok", "top_k": 3}, "top_k"),
    ({"k": 3}, "question"),
])
def test_query_validation_names_the_field(small: Api, body: dict[str, Any], field: str) -> None:
    """Each invalid query body is a 400 whose ``field`` names what to fix."""
    small.call("POST", "/v1/indexes", json={"name": "q-index"})
    assert error(small.call("POST", "/v1/indexes/q-index/query", json=body), 400)["field"] == field


def test_names_media_types_and_json_syntax(small: Api) -> None:
    """A bad index name in the path, a body that is not JSON, or the wrong media type
    are 4xx naming the problem; an unknown route or method is JSON too."""
    bad_name = error(small.call("POST", "/v1/indexes/Bad..Name/query", json={"question": "q"}),
                     400)
    assert bad_name["field"] == "name"
    not_json = error(small.call("POST", f"/v1/indexes/{INDEX}/query", data="{\n  nope",
                                headers={"Content-Type": "application/json"}), 400)
    assert not_json["code"] == "invalid_json" and not_json["line"] == 2
    plain = small.call("POST", f"/v1/indexes/{INDEX}/documents", data="text",
                       headers={"Content-Type": "text/plain"})
    assert error(plain, 415)["code"] == "unsupported_media_type"
    assert error(small.call("PUT", "/v1/jobs", check=False), 405)["code"] == "method_not_allowed"
    assert error(small.call("GET", "/v1/nothing", check=False), 404)["code"] == "not_found"


def test_request_timeout_is_504(small: Api) -> None:
    """A request that outlasts HOPINDEX_API_REQUEST_TIMEOUT_S is a 504 saying so."""
    settings = replace(small.service.settings, api_request_timeout_s=0.001)
    hurried = Hopindex(settings, backends=small.service.backends)
    with BackgroundServer(hurried, KeyRing()) as server:
        small.call("POST", "/v1/indexes", json={"name": "slow"})
        response = requests.post(f"{server.url}/v1/indexes/slow/query", timeout=30,
                                 json={"question": "which query outlasts a millisecond?"})
        assert error(response, 504)["code"] == "timeout"


def test_server_faults_are_500s_with_a_request_id_and_no_secrets(make_api: ApiFactory) -> None:
    """A backend failing under a request is a 500 saying only to quote the request id;
    the log has the id and the traceback as text, never the request's key."""
    broken = make_api()
    broken.service.backends.state.close()
    merged = [structlog.contextvars.merge_contextvars]
    with structlog.testing.capture_logs(processors=merged) as entries:
        response = broken.call("GET", "/v1/indexes", headers={"X-Request-Id": "trace-me-1"})
    found = error(response, 500)
    assert found == {"code": "internal", "request_id": "trace-me-1",
                     "message": found["message"]} and "Traceback" not in response.text
    failed = [e for e in entries if e["event"] == "http_request_failed"]
    assert failed and failed[0]["request_id"] == "trace-me-1"
    assert "Traceback" in failed[0]["traceback"] and "is closed" in failed[0]["traceback"]
    assert KEYS["write"] not in repr(entries)


def test_a_duplicate_id_error_names_the_upload_not_a_server_path(make_api: ApiFactory) -> None:
    """Two uploaded records with one id: the job names the second by its line in the
    uploaded file and points at the first the same way; no temporary path of the server
    is shown to the client."""
    files = [("file", ("dup.jsonl", b'{"id": "x", "text": "one"}\n{"id": "x", "text": "two"}\n'))]
    api = make_api()  # its own service: earlier tests here open others in this process
    accepted = api.call("POST", "/v1/indexes/uploads/documents?on_error=skip", files=files)
    assert accepted.status_code == 202, accepted.text
    job = api.wait_job(accepted.json()["job_id"])
    [failure] = job["errors"]
    assert "duplicate id 'x': first seen at dup.jsonl:1" in failure["reason"]
    shown = json.dumps(job)
    assert "hopindex-upload-" not in shown and "/tmp" not in shown, shown
