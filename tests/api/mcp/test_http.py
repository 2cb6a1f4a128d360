"""``/mcp`` on the HTTP server, driven with the official MCP SDK's client over the
streamable HTTP transport: the key decides before the MCP layer is reached (none or a
wrong one is a 401, as on every route), a read key is offered the read tools only and
cannot ingest, a key for one index sees and reaches that index only, the files tools
are not offered at all; search finds a sample question's gold passages; inline records
are ingested and waited for with progress over SSE; bad arguments are tool errors
naming the argument, with the code and message the REST API answers."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hopindex.api.http.mcp import MCP_PATH
from tests.api.http.conftest import KEYS, SCOPED_INDEX, Api, sample_documents
from tests.api.mcp.conftest import (
    bad_calls,
    hotpot_question,
    refusals,
    run_session,
    structured,
    tool_error,
)

pytestmark = pytest.mark.integration

INDEX = "sample"
READ_TOOLS = {"search", "answer", "list_indexes", "describe_index", "job_status",
              "wait_for_job"}
WRITE_TOOLS = {"ingest_text", "delete_documents"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}


def transport(api: Api, role: str) -> Any:
    """The SDK's streamable HTTP transport to ``/mcp``, sending the role's key."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEYS[role]}"},
                              timeout=httpx2.Timeout(120.0))
    return streamable_http_client(api.url + MCP_PATH, http_client=http)


@pytest.fixture(scope="module")
def built(api: Api) -> tuple[str, set[str]]:
    """A sample question, and its gold titles, over index ``sample`` holding its ten
    context paragraphs (ingested through the REST API); index tenant-a holds them too."""
    question, documents = sample_documents()
    for index in (INDEX, SCOPED_INDEX):
        job = api.call("POST", f"/v1/indexes/{index}/documents", json=documents).json()
        assert api.wait_job(job["job_id"])["state"] == "succeeded"
    asked, gold = hotpot_question(0)
    assert asked == question
    return question, gold


def test_no_key_or_a_wrong_key_is_refused_before_the_mcp_layer(api: Api) -> None:
    """An initialize without a key, or with a wrong one, is the API's 401 JSON error; with
    a read key the MCP layer answers it."""
    for headers in ({}, {"Authorization": "Bearer wrong-key-0123456789abcdef"}):
        refused = requests.post(api.url + MCP_PATH, json=INITIALIZE, timeout=30,
                                headers={**MCP_HEADERS, **headers})
        assert refused.status_code == 401, refused.text
        assert refused.json()["error"]["code"] == "unauthenticated"
    accepted = requests.post(api.url + MCP_PATH, json=INITIALIZE, timeout=30,
                             headers={**MCP_HEADERS, "Authorization": f"Bearer {KEYS['read']}"})
    assert accepted.status_code == 200 and '"serverInfo"' in accepted.text


def test_the_tools_offered_follow_the_key(api: Api, built: tuple[str, set[str]]) -> None:
    """A write key gets every tool but ingest_paths; a read key the read tools, and an
    ingest from it is refused as the REST API refuses it; a key for one index lists that
    index only and is refused another, naming the index, in the REST API's words."""

    async def listing(client: Client) -> set[str]:
        return {tool.name for tool in (await client.list_tools()).tools}

    async def read_key(client: Client) -> tuple[set[str], dict[str, Any]]:
        refused = tool_error(await client.call_tool(
            "ingest_text", {"index": INDEX, "records": [{"text": "x"}]}))
        return await listing(client), refused

    async def scoped_key(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        listed = structured(await client.call_tool("list_indexes", {}))
        refused = tool_error(await client.call_tool(
            "search", {"question": "Who?", "index": INDEX}))
        return listed, refused

    assert run_session(transport(api, "write"), listing) == READ_TOOLS | WRITE_TOOLS
    read_tools, read_refusal = run_session(transport(api, "read"), read_key)
    assert read_tools == READ_TOOLS
    rest = api.call("POST", f"/v1/indexes/{INDEX}/documents", key="read",
                    json=[{"text": "x"}]).json()["error"]
    assert (read_refusal["code"], read_refusal["message"]) == (rest["code"], rest["message"])
    listed, scoped_refusal = run_session(transport(api, "scoped"), scoped_key)
    assert [i["name"] for i in listed["indexes"]] == [SCOPED_INDEX]
    rest = api.call("POST", f"/v1/indexes/{INDEX}/query", key="scoped",
                    json={"question": "Who?"}).json()["error"]
    assert scoped_refusal == {"code": "forbidden", "message": rest["message"],
                              "field": "index", "retryable": False}


def test_search_finds_the_gold_passages_and_ingest_reports_progress(
        api: Api, built: tuple[str, set[str]]) -> None:
    """With a read key, search returns a gold passage of the question in the top 5; with
    a write key, ingest_text answers a job at once and wait_for_job streams its progress
    as it runs and returns it succeeded, its document then found."""
    question, gold = built
    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async def search(client: Client) -> dict[str, Any]:
        return structured(await client.call_tool(
            "search", {"question": question, "index": INDEX, "k": 5}))

    async def ingest(client: Client) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        job = structured(await client.call_tool("ingest_text", {"index": "added", "records": [
            {"id": "zeta", "title": "Zeta", "text": "Zeta is a harbour town on Lake Omega."}]}))
        waited = structured(await client.call_tool(
            "wait_for_job", {"job_id": job["job_id"], "timeout_s": 120},
            progress_callback=on_progress))
        found = structured(await client.call_tool(
            "search", {"question": "Which town is on Lake Omega?", "index": "added"}))
        return job, waited, found

    titles = [p["title"] for p in run_session(transport(api, "read"), search)["passages"]]
    assert len(titles) == 5 and gold & set(titles), titles
    job, waited, found = run_session(transport(api, "write"), ingest)
    assert job["state"] in ("queued", "running", "succeeded")
    assert waited["state"] == "succeeded" and waited["job_id"] == job["job_id"]
    assert progress and progress[-1] == 100.0
    assert found["passages"][0]["doc_id"] == "zeta"


def test_every_tool_refuses_bad_arguments_as_the_rest_api_words_them(
        api: Api, built: tuple[str, set[str]]) -> None:
    """Every tool's bad arguments are tool errors naming the argument; ingest_paths is an
    unknown tool here; an unknown index is refused with the REST API's code and message."""

    async def body(client: Client) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        wrong = await refusals(client, bad_calls(INDEX))
        paths = tool_error(await client.call_tool(
            "ingest_paths", {"index": INDEX, "paths": ["/etc/passwd"]}))
        unknown = tool_error(await client.call_tool("describe_index", {"index": "nope"}))
        return wrong, paths, unknown

    wrong, paths, unknown = run_session(transport(api, "write"), body)
    assert wrong == []
    assert paths["field"] == "name" and "unknown tool 'ingest_paths'" in paths["message"]
    rest = api.call("GET", "/v1/indexes/nope").json()["error"]
    assert (unknown["code"], unknown["message"]) == (rest["code"], rest["message"])
