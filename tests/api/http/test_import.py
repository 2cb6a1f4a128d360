"""``POST /v1/indexes/import`` on a real server: an index's export, sent back, is the
index again (the same counts, the same export file); an index of that name already
here is a 409 (index_exists), refused before anything is written, through the remote
client as ``IndexExistsError``; a key limited to other indexes is refused; a malformed
file is a 400 naming its line in the body, not the server's temporary file; a body
past HOPINDEX_API_MAX_BODY_BYTES is a 413."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests

from hopindex.api.client.models import TransferCounts
from hopindex.api.client.remote import RemoteClient
from hopindex.api.transfer_format import FORMAT, VERSION
from hopindex.core.errors import IndexExistsError
from tests.api.http.conftest import KEYS, Api, ApiFactory, sample_documents

pytestmark = pytest.mark.integration

INDEX = "moved"
NDJSON = {"Content-Type": "application/x-ndjson"}


@pytest.fixture(scope="module")
def api(make_api: ApiFactory) -> Api:
    api = make_api()
    _, docs = sample_documents(limit=3, question=1)
    job = api.call("POST", f"/v1/indexes/{INDEX}/documents", json=docs).json()
    assert api.wait_job(job["job_id"])["state"] == "succeeded"
    return api


def _error(response: requests.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    found: dict[str, Any] = response.json()["error"]
    return found


def _import(api: Api, body: bytes, key: str = "write") -> requests.Response:
    return api.call("POST", "/v1/indexes/import", key=key, data=body, headers=NDJSON)


def test_an_export_imports_back_as_the_same_index(api: Api, tmp_path: Path) -> None:
    """Exported, deleted and imported: 201 with the export's counts, and the index
    exports to the same file again; importing it over itself is a 409."""
    exported = api.call("GET", f"/v1/indexes/{INDEX}/export", key="read").content
    counts = json.loads(exported.decode().splitlines()[-1])["counts"]
    described = api.call("GET", f"/v1/indexes/{INDEX}").json()

    exists = _error(_import(api, exported), 409)
    assert exists["code"] == "index_exists" and repr(INDEX) in exists["message"]
    assert api.call("DELETE", f"/v1/indexes/{INDEX}").status_code == 204

    imported = _import(api, exported)
    assert imported.status_code == 201, imported.text
    assert imported.json() == counts and counts["documents"] == 3
    assert imported.headers["Location"] == f"/v1/indexes/{INDEX}"
    again = api.call("GET", f"/v1/indexes/{INDEX}").json()
    assert {k: again[k] for k in ("method", "documents", "units", "status")} == \
        {k: described[k] for k in ("method", "documents", "units", "status")}
    assert api.call("GET", f"/v1/indexes/{INDEX}/export").content == exported

    # The remote client: the same answer, and the same error type as in this process.
    path = tmp_path / "moved.jsonl"
    path.write_bytes(exported)
    client = RemoteClient(api.url, KEYS["write"])
    with pytest.raises(IndexExistsError):
        client.indexes.import_index(path)
    client.indexes.delete_index(INDEX)
    assert client.indexes.import_index(path) == TransferCounts.model_validate(counts)


def test_a_key_for_other_indexes_may_not_import_this_one(api: Api) -> None:
    """The index is named inside the body: a scoped key is refused (403, field index)
    whether or not the index is here, and a read key is refused the route."""
    exported = api.call("GET", f"/v1/indexes/{INDEX}/export").content
    scoped = _error(_import(api, exported, key="scoped"), 403)
    assert scoped["field"] == "index" and INDEX in scoped["message"]
    assert _error(_import(api, exported, key="read"), 403)["code"] == "forbidden"


@pytest.mark.parametrize(("body", "line", "says"), [
    (b"not json\n", 1, "body.jsonl:1"),
    (b'{"type": "document"}\n', 1, "no hopindex"),
    (b"\n" + json.dumps({"type": "header", "format": FORMAT, "version": VERSION,
                         "index": "half"}).encode() + b"\n", 2, "malformed header"),
])
def test_a_malformed_file_is_a_400_naming_its_line(api: Api, body: bytes, line: int,
                                                   says: str) -> None:
    found = _error(_import(api, body), 400)
    assert found["code"] == "invalid_input" and found["field"] == "body"
    assert (found["line"], found["file"]) == (line, "body.jsonl")
    assert says in found["message"] and "/tmp" not in found["message"]


def test_bodies_the_route_does_not_take(api: Api, make_api: ApiFactory) -> None:
    """Empty, not UTF-8, not NDJSON, or past the body limit (Content-Length or not)."""
    assert _error(_import(api, b""), 400)["field"] == "body"
    assert "UTF-8" in _error(_import(api, b"\xff\xfe{}\n"), 400)["message"]
    wrong = api.call("POST", "/v1/indexes/import", json={"type": "header"})
    assert _error(wrong, 415)["code"] == "unsupported_media_type"
    small = make_api(api_max_body_bytes=2000)
    exported = api.call("GET", f"/v1/indexes/{INDEX}/export").content
    assert len(exported) > 2000
    for data in (exported, iter([exported[:1500], exported[1500:]])):
        found = _error(small.call("POST", "/v1/indexes/import", data=data, headers=NDJSON),
                       413)
        assert found["code"] == "body_too_large"
        assert "HOPINDEX_API_MAX_BODY_BYTES" in found["message"]
