"""``GET /v1/indexes/{name}/documents?id=DOC_ID`` on a real server: the document as the
client models it (every answer checked against the spec), its id given as a query
parameter so that ids holding '/' and '#' reach it; the id's refusals (missing,
blank, unknown) name the field ``id``; a read key may read, a key for another index
may not."""

from __future__ import annotations

from typing import Any

import pytest

from hopindex.core.citations import RESERVED_METADATA_KEY
from tests.api.http.conftest import SCOPED_INDEX, Api, ApiFactory

pytestmark = pytest.mark.integration

INDEX = "tenant-b"
FREE_ID = "notes/2024#radium?x=1&y=2"
DOCS = [{"id": "d1", "title": "Warsaw", "text": "Marie Curie was born in Warsaw.",
         "metadata": {"source": "wiki", "year": 1867}},
        {"id": FREE_ID, "title": "Radium", "text": "The Curies discovered radium in 1898."}]
PATH = f"/v1/indexes/{INDEX}/documents"


@pytest.fixture(scope="module")
def documents_api(make_api: ApiFactory) -> Api:
    """A server (keys: write, read, and scoped to another index) with INDEX holding
    DOCS, read from records."""
    api = make_api()
    job = api.call("POST", PATH, json=DOCS)
    assert job.status_code == 202, job.text
    assert api.wait_job(job.json()["job_id"])["state"] == "succeeded"
    return api


def error(response: Any) -> dict[str, Any]:
    found: dict[str, Any] = response.json()["error"]
    return found


def test_a_read_key_gets_the_document(documents_api: Api) -> None:
    """200 with every field of the client's DocumentView: the metadata given without
    hopindex's own fields, and no citation for a record."""
    response = documents_api.call("GET", PATH, key="read", params={"id": "d1"})
    assert response.status_code == 200, response.text
    found = response.json()
    assert set(found) == {"doc_id", "index", "title", "text", "content_hash", "metadata",
                          "citation"}
    assert (found["doc_id"], found["index"], found["title"], found["text"]) == (
        "d1", INDEX, "Warsaw", "Marie Curie was born in Warsaw.")
    assert found["metadata"] == {"source": "wiki", "year": 1867}
    assert RESERVED_METADATA_KEY not in found["metadata"]
    assert found["citation"] is None


def test_an_id_with_slash_hash_and_query_characters(documents_api: Api) -> None:
    """An id holding '/', '#', '?', '&' and '=' is one URL-encoded query parameter."""
    response = documents_api.call("GET", PATH, params={"id": FREE_ID})
    assert response.status_code == 200, response.text
    assert response.json()["doc_id"] == FREE_ID


@pytest.mark.parametrize(("query", "message"), [
    pytest.param({}, "missing required query parameter 'id'", id="missing"),
    pytest.param({"id": ""}, "'id' must not be empty", id="empty"),
    pytest.param({"id": " \t"}, "'id' must not be empty", id="blank"),
])
def test_no_id_is_a_400_naming_it(documents_api: Api, query: dict[str, str],
                                  message: str) -> None:
    """Without an id, or with a blank one: 400 invalid_input on field id."""
    response = documents_api.call("GET", PATH, params=query)
    assert response.status_code == 400, response.text
    assert error(response)["code"] == "invalid_input"
    assert error(response)["field"] == "id"
    assert error(response)["message"].startswith(message)


def test_an_unknown_id_is_a_404_naming_it(documents_api: Api) -> None:
    """An id no document of the index has: 404 not_found on field id, the message
    naming the id and the index."""
    response = documents_api.call("GET", PATH, params={"id": "nowhere/1"})
    assert response.status_code == 404, response.text
    assert error(response) == {
        "code": "not_found", "field": "id",
        "message": f"no document 'nowhere/1' in index {INDEX!r}",
        "request_id": error(response)["request_id"]}


def test_an_unknown_index_is_a_404_without_a_field(documents_api: Api) -> None:
    """No such index: the 404 every route of an index gives, naming no field."""
    response = documents_api.call("GET", "/v1/indexes/absent/documents", params={"id": "d1"})
    assert response.status_code == 404, response.text
    assert error(response)["code"] == "not_found" and "field" not in error(response)


def test_a_key_for_another_index_is_refused(documents_api: Api) -> None:
    """A key scoped to another index gets a 403 naming index, before the id is looked
    at (the same answer with an id that exists, one that does not, and none)."""
    for query in ({"id": "d1"}, {"id": "nowhere"}, {}):
        response = documents_api.call("GET", PATH, key="scoped", params=query)
        assert response.status_code == 403, response.text
        assert error(response)["code"] == "forbidden" and error(response)["field"] == "index"
    own = documents_api.call("GET", f"/v1/indexes/{SCOPED_INDEX}/documents", key="scoped",
                             params={"id": "d1"})
    assert own.status_code == 404  # its own index: allowed, and there is none of that name
