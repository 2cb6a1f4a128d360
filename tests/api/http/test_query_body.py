"""The query body on a real server: options a method does not take are refused naming
``options.KEY`` and listing the ones it does; an optional field sent as null means its
default, and the published spec says the same; an oversize query body is a 413 naming
the limit that governs it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema_rs
import pytest

from tests.api.http.conftest import Api, ApiFactory, sample_documents

pytestmark = pytest.mark.integration

INDEX = "options"
OPTIONAL_FIELDS = ("method", "k", "retrieval", "fusion", "candidates", "dense_weight",
                   "keyword_weight", "options")


@pytest.fixture(scope="module")
def api(make_api: ApiFactory) -> Api:
    api = make_api()
    _, docs = sample_documents(limit=3)
    job = api.call("POST", f"/v1/indexes/{INDEX}/documents", json=docs)
    assert api.wait_job(job.json()["job_id"])["state"] == "succeeded"
    return api


def error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    found: dict[str, Any] = response.json()["error"]
    return found


@pytest.mark.parametrize(("body", "field", "listed"), [
    # Options are one method's, named: without one they are refused naming method.
    ({"options": {"walk": "off"}}, "method", "belong to one query method: name it"),
    ({"method": "hops", "options": {"alpha": 0.2}}, "options.alpha",
     "for method 'hops'; known: named, walk"),
    ({"method": "naive", "options": {"condition": "A"}}, "options.condition",
     "it takes none of its own (rerank is every method's)"),
    ({"method": "bridgerag", "options": {"alfa": 0.2}}, "options.alfa",
     "known: condition, extraction, bridges, alpha"),
])
def test_unknown_options_are_refused_listing_the_known(api: Api, body: dict[str, Any],
                                                       field: str, listed: str) -> None:
    """An option the method named does not read is a 400 naming ``options.KEY`` and the
    options that method takes, before anything runs; options with no method named are
    a 400 naming ``method``."""
    found = error(api.call("POST", f"/v1/indexes/{INDEX}/query",
                           json={"question": "Who?", **body}), 400)
    assert found["field"] == field and listed in found["message"]


def test_a_bad_option_value_names_options_not_params(api: Api) -> None:
    """A value the method refuses is named as the client sent it: options.alpha."""
    found = error(api.call("POST", f"/v1/indexes/{INDEX}/query", json={
        "question": "Who?", "method": "bridgerag", "options": {"alpha": 5}}), 400)
    assert found["field"] == "options.alpha" and "between 0 and 1" in found["message"]


def test_null_means_default_in_the_server_and_the_spec(api: Api) -> None:
    """Every optional field sent as null is answered as if left out, and the published
    QueryRequest schema accepts exactly those bodies (and still refuses a wrong type)."""
    spec = api.call("GET", "/v1/openapi.json", key=None).json()
    schema = {**spec["components"]["schemas"]["QueryRequest"],
              "components": spec["components"]}
    validator = jsonschema_rs.Draft202012Validator(schema)
    plain = api.call("POST", f"/v1/indexes/{INDEX}/query", json={"question": "Who?"})
    assert plain.status_code == 200, plain.text
    for name in OPTIONAL_FIELDS:
        body = {"question": "Who?", name: None}
        validator.validate(body)
        answered = api.call("POST", f"/v1/indexes/{INDEX}/query", json=body)
        assert answered.status_code == 200, (name, answered.text)
        assert answered.json()["method"] == plain.json()["method"]
        assert [p["doc_id"] for p in answered.json()["passages"]] == \
            [p["doc_id"] for p in plain.json()["passages"]]
    assert not validator.is_valid({"question": "Who?", "method": 3})
    assert not validator.is_valid({"question": None})


def test_oversize_query_body_names_the_limit_that_governs_it(make_api: ApiFactory) -> None:
    """A query body over 1,000,000 bytes is a 413 naming that limit, not
    HOPINDEX_API_MAX_BODY_BYTES (which is larger here and does not apply), whether its
    Content-Length says so or it arrives chunked."""
    api = make_api(api_max_body_bytes=5_000_000)
    big = json.dumps({"question": "q", "options": {"pad": "x" * 1_100_000}})

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(big), 64 * 1024):
            yield big[start:start + 64 * 1024].encode()

    for data in (big, chunks()):
        found = error(api.call("POST", f"/v1/indexes/{INDEX}/query", data=data,
                               headers={"Content-Type": "application/json"}), 413)
        assert found["code"] == "body_too_large" and found["limit_bytes"] == 1_000_000
        assert "1,000,000 bytes" in found["message"]
        assert "HOPINDEX_API_MAX_BODY_BYTES" not in found["message"]
