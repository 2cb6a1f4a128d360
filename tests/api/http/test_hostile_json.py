"""Hostile JSON on a real server: 10,000-deep nesting, a 5,000-digit integer, a
70,000-character string and unpaired surrogates (escaped, and encoded in the bytes) are
a 400 in the JSON error shape naming the field, on every route that reads JSON; in an
ingest body they fail their own record, so ``on_error=skip`` keeps the good ones."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.http.conftest import Api, ApiFactory

pytestmark = pytest.mark.integration

INDEX = "hostile"
MAX_DOCUMENT_BYTES = 1_000
JSON_TYPE = {"Content-Type": "application/json"}
PLACEHOLDER = "__hostile__"

# What each hostile value is: its raw JSON, how the field it sits in is named (its
# path), and words the message holds.
HOSTILE: dict[str, tuple[bytes, str, str]] = {
    "deep": (b"[" * 10_000 + b"]" * 10_000, "{field}" + "[0]" * 11, "nests JSON deeper than"),
    "huge integer": (b"9" * 5_000, "{field}", "number of 5,000 characters"),
    "long string": (b'"' + b"x" * 70_000 + b'"', "{field}", "string of 70,000 characters"),
    "escaped surrogate": (b'"why \\ud800"', "{field}", "unpaired surrogate (U+D800)"),
    "encoded surrogate": (b'"why \xed\xa0\x80"', "{field}", "unpaired surrogate (U+D800)"),
}
# Every route that reads a JSON body: the rest of a valid body, the field to poison,
# and the error code it answers with.
ROUTES: dict[str, tuple[str, str, dict[str, Any], str, str]] = {
    "create index": ("POST", "/v1/indexes", {"name": "h-index"}, "name", "invalid_input"),
    "query": ("POST", f"/v1/indexes/{INDEX}/query", {"question": "Where?"}, "question",
              "invalid_input"),
    "delete documents": ("DELETE", f"/v1/indexes/{INDEX}/documents", {"ids": ["a"]}, "ids",
                         "invalid_input"),
    "add webhook": ("POST", "/v1/webhooks", {"index": INDEX, "url": "https://example.com/h"},
                    "url", "invalid_input"),
    "ingest": ("POST", f"/v1/indexes/{INDEX}/documents", {"id": "d", "text": "Some text."},
               "title", "invalid_document"),
}


@pytest.fixture(scope="module")
def api(make_api: ApiFactory) -> Api:
    return make_api(max_document_bytes=MAX_DOCUMENT_BYTES)


def poisoned(body: dict[str, Any], field: str, value: bytes) -> bytes:
    """``body`` as JSON with ``value`` (raw JSON bytes) as the value of ``field``."""
    text = json.dumps({**body, field: PLACEHOLDER}).encode()
    return text.replace(json.dumps(PLACEHOLDER).encode(), value)


def error_of(response: Any) -> dict[str, Any]:
    assert response.status_code == 400, response.text[:500]
    assert response.headers["Content-Type"].startswith("application/json")
    found: dict[str, Any] = response.json()["error"]
    assert found["message"] and found["request_id"]
    return found


@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize("route", ROUTES)
def test_hostile_json_is_a_400_naming_the_field(api: Api, route: str, kind: str) -> None:
    """Never a 500 (RecursionError, ValueError, a surrogate reaching a backend): the
    answer follows the spec, and names the field and what is wrong with it."""
    method, path, body, field, code = ROUTES[route]
    value, where, reason = HOSTILE[kind]
    response = api.call(method, path, data=poisoned(body, field, value), headers=JSON_TYPE)
    found = error_of(response)
    assert found["code"] == code
    assert found["field"] == where.format(field=field)
    assert reason in found["message"]
    assert api.call("GET", "/healthz").status_code == 200


NDJSON = {"Content-Type": "application/x-ndjson"}


def ndjson_body() -> tuple[bytes, list[str]]:
    """Two good records around one of each hostile kind (in ``metadata.note``), and the
    origin each bad line's error must have."""
    good = [json.dumps({"id": f"good-{n}", "title": f"Good {n}",
                        "text": f"Good record number {n} for the index."}).encode()
            for n in (1, 2)]
    record = {"id": "bad", "text": "Bad record.", "metadata": {"note": PLACEHOLDER}}
    kinds = [kind for kind in HOSTILE if kind != "long string"]
    bad = [poisoned(record, "metadata", b'{"note": ' + HOSTILE[kind][0] + b"}")
           for kind in kinds]
    lines = [good[0], *bad, good[1]]
    # A path is shown cut after twelve parts: here metadata, note and ten levels.
    origins = [f"body.jsonl:{n}:metadata.note" + ("[0]" * 10 if kind == "deep" else "")
               for n, kind in enumerate(kinds, start=2)]
    return b"\n".join(lines) + b"\n", origins


def test_ndjson_ingest_with_skip_keeps_the_good_records(api: Api) -> None:
    """on_error=skip: the good lines are ingested, the job lists each bad line with its
    field; the default (reject) refuses the body with every bad line listed."""
    body, origins = ndjson_body()
    rejected = error_of(api.call("POST", f"/v1/indexes/{INDEX}/documents", data=body,
                                 headers=NDJSON))
    assert rejected["code"] == "invalid_document" and rejected["error_count"] == len(origins)
    assert [e["where"] for e in rejected["errors"]] == origins
    assert rejected["line"] == 2 and rejected["field"] == "metadata.note" + "[0]" * 10

    accepted = api.call("POST", f"/v1/indexes/{INDEX}/documents?on_error=skip", data=body,
                        headers=NDJSON)
    assert accepted.status_code == 202, accepted.text
    job = api.wait_job(accepted.json()["job_id"])
    assert job["state"] == "succeeded"
    assert sorted(e["where"] for e in job["errors"]) == sorted(origins)
    assert sorted(api.service.backends.state.document_hashes(INDEX)) == ["good-1", "good-2"]


def test_json_array_ingest_with_skip_fails_the_bad_record_only(api: Api) -> None:
    """In a JSON array body a runaway number or a surrogate fails its own record, named
    by position and field; the others are ingested."""
    records = [b'{"id": "arr-1", "text": "The first record of the array."}',
               b'{"id": "arr-bad", "text": "x", "metadata": {"n": ' + b"7" * 5_000 + b"}}",
               b'{"id": "arr-sur", "text": "x", "title": "\\udfff"}',
               b'{"id": "arr-2", "text": "The last record of the array."}']
    response = api.call("POST", f"/v1/indexes/{INDEX}/documents?on_error=skip",
                        data=b"[" + b", ".join(records) + b"]", headers=JSON_TYPE)
    assert response.status_code == 202, response.text
    job = api.wait_job(response.json()["job_id"])
    assert sorted(e["where"] for e in job["errors"]) == ["body.json[1]:metadata.n",
                                                         "body.json[2]:title"]
    stored = api.service.backends.state.document_hashes(INDEX)
    assert {"arr-1", "arr-2"} <= set(stored) and not {"arr-bad", "arr-sur"} & set(stored)
