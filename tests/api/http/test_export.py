"""``GET /v1/indexes/{name}/export``: the body is byte for byte the file a local export of
the same index writes, as the spec describes it; a missing index is a 404 and an index
with a running job a 409 (index_busy), both as JSON before any of the body; a read key
may export, a key for other indexes may not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hopindex.api.client.remote import RemoteClient
from hopindex.api.transfer import export_index, save_export
from hopindex.core.errors import IndexBusyError
from hopindex.core.models import Job, JobKind, JobState
from hopindex.testing.llm_server import LlmTestServer
from tests.api.http.conftest import KEYS, ApiFactory, sample_documents

pytestmark = pytest.mark.integration

INDEX = "wiki"


def test_export_streams_the_local_export_file(make_api: ApiFactory, llm: LlmTestServer,
                                              tmp_path: Path) -> None:
    """The export route and the remote client's saving of it give the local export's
    bytes and counts; refusals come before the body, and the client keeps no file."""
    api = make_api(embedder_url=f"openai://{llm.config.embedding_model}",
                   llm_base_url=llm.base_url, llm_api_key="test-key")
    _, docs = sample_documents(limit=4)
    job = api.call("POST", f"/v1/indexes/{INDEX}/documents", json=docs).json()
    assert api.wait_job(job["job_id"])["state"] == "succeeded"

    answer = api.call("GET", f"/v1/indexes/{INDEX}/export", key="read")
    assert answer.status_code == 200
    assert answer.headers["Content-Type"].startswith("application/x-ndjson")
    local = tmp_path / "local.jsonl"
    summary = export_index(api.service.backends, INDEX, local)
    assert answer.content == local.read_bytes()
    lines = answer.content.decode().splitlines()
    assert json.loads(lines[0])["type"] == "header"
    assert json.loads(lines[-1]) == {"type": "end", "counts": summary.as_dict()}
    # What `hopindex export --api` does with it: the same file, the same summary.
    client = RemoteClient(api.url, KEYS["read"])
    assert save_export(client.indexes.export_lines(INDEX), tmp_path / "remote.jsonl",
                       INDEX) == summary
    assert (tmp_path / "remote.jsonl").read_bytes() == local.read_bytes()

    missing = api.call("GET", "/v1/indexes/nosuch/export")
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")
    scoped = api.call("GET", f"/v1/indexes/{INDEX}/export", key="scoped")
    assert scoped.status_code == 403

    api.service.backends.state.create_job(Job(job_id="job-running", index=INDEX,
                                              kind=JobKind.INGEST, state=JobState.RUNNING))
    busy = api.call("GET", f"/v1/indexes/{INDEX}/export")
    assert (busy.status_code, busy.json()["error"]["code"]) == (409, "index_busy")
    assert "job-running" in busy.json()["error"]["message"]
    with pytest.raises(IndexBusyError) as refused:
        save_export(client.indexes.export_lines(INDEX), tmp_path / "busy.jsonl", INDEX)
    assert refused.value.http_status == 409 and not (tmp_path / "busy.jsonl").exists()
