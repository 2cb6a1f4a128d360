"""``hopindex mcp`` started as an agent's host starts it (a subprocess, settings from its
environment) and driven with the official MCP SDK's client over stdio: the tools it
lists, a search of the bundled sample that finds the gold passages, inline records and
files ingested and waited for with progress, the resources, and every tool's bad
arguments answered as tool errors naming the argument, in the CLI's words."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from hopindex.api.mcp.server import document_uri
from hopindex.core.budget import BudgetLimits
from hopindex.core.errors import HopindexError
from hopindex.core.settings import Settings
from hopindex.testing.document_files import CURIE_SECTIONS, write_markdown
from hopindex.testing.llm_server import LlmTestServer
from tests.api.http.conftest import KEYS, ApiFactory
from tests.api.mcp.conftest import (
    bad_calls,
    bad_path_calls,
    hotpot_question,
    refusals,
    run_session,
    structured,
    tool_error,
)
from tests.conftest import HOTPOT_INDEX, llm_settings, local_client
from tests.waiting import wait_until
from tests.workers.conftest import embedder_settings
from tests.workers.logged_processes import hopindex_argv, settings_env

pytestmark = pytest.mark.integration

ALL_TOOLS = {"search", "answer", "list_indexes", "describe_index", "ingest_text",
             "ingest_paths", "job_status", "wait_for_job", "delete_documents"}


def stdio(settings: Settings) -> StdioServerParameters:
    """``hopindex mcp`` as a host's configuration starts it: its command and environment."""
    command, *args = hopindex_argv("mcp")
    return StdioServerParameters(command=command, args=args, env=settings_env(settings))


@pytest.fixture(scope="module")
def hotpot(hotpot_built: Path, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A private copy of the bundled HotpotQA-100 index (``hotpot``, extractive)."""
    data_dir = tmp_path_factory.mktemp("mcp-hotpot") / "data"
    shutil.copytree(hotpot_built, data_dir)
    return Settings(data_dir=data_dir).resolved()


def test_search_finds_the_gold_passages_of_sample_questions(hotpot: Settings) -> None:
    """The tools listed are the nine, each with a described JSON schema; a search of the
    sample index returns, for each of three sample questions, a gold passage in the top
    5, each passage with its id, title, text, the unit that led to it and why."""
    questions = [hotpot_question(n) for n in range(3)]

    async def body(client: Client) -> tuple[Any, list[dict[str, Any]]]:
        tools = await client.list_tools()
        found = [structured(await client.call_tool(
            "search", {"question": question, "index": HOTPOT_INDEX, "k": 5}))
            for question, _ in questions]
        return tools, found

    tools, found = run_session(stdio(hotpot), body)
    assert {tool.name for tool in tools.tools} == ALL_TOOLS
    for tool in tools.tools:
        assert tool.description and tool.input_schema["type"] == "object"
        for name, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), f"{tool.name}.{name} has no description"
    for (question, gold), result in zip(questions, found, strict=True):
        titles = [p["title"] for p in result["passages"]]
        assert len(titles) == 5 and gold & set(titles), (question, gold, titles)
        for passage in result["passages"]:
            assert passage["doc_id"] and passage["text"] and passage["why"]
            assert passage["via"]["kind"] in ("passage", "bridge")


def test_every_tool_refuses_bad_arguments_naming_the_argument(hotpot: Settings) -> None:
    """Each tool, given arguments it cannot take, answers a tool error (not a protocol
    error) whose field is the argument; an unknown index is refused with the code and
    message the client (and so the CLI) gives."""
    calls = bad_calls(HOTPOT_INDEX) + bad_path_calls(HOTPOT_INDEX)

    async def body(client: Client) -> tuple[list[str], dict[str, Any]]:
        wrong = await refusals(client, calls)
        unknown = tool_error(await client.call_tool("describe_index", {"index": "nope"}))
        return wrong, unknown

    wrong, unknown = run_session(stdio(hotpot), body)
    assert wrong == []
    with local_client(hotpot) as client, pytest.raises(HopindexError) as direct:
        client.indexes.describe_index("nope")
    assert (unknown["code"], unknown["message"]) == (direct.value.code, str(direct.value))


def test_inline_records_and_files_are_ingested_waited_for_and_read_back(
        start_server: Callable[..., LlmTestServer], tmp_path: Path) -> None:
    """ingest_text returns a job at once; wait_for_job reports progress and returns it
    ended, the empty record failed alone on it; answer (an IndexRAG index, the default
    with an LLM) answers with its passages and usage. ingest_paths reads a Markdown file here,
    split by section and cited, a missing file beside it failing alone on the job; the
    document resource returns a section by its id."""
    server = start_server()
    settings = llm_settings(tmp_path / "data", server, **embedder_settings(server))
    notes = tmp_path / "notes.md"
    write_markdown(notes, CURIE_SECTIONS, title="The Curies")
    missing = str(tmp_path / "missing.pdf")
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def body(client: Client) -> dict[str, Any]:
        started = structured(await client.call_tool("ingest_text", {"index": "notes", "records": [
            {"id": "alpha", "title": "Alpha", "text": "Alpha is a port city in Betaland."},
            {"id": "empty", "title": "Empty", "text": ""}]}))
        waited = structured(await client.call_tool(
            "wait_for_job", {"job_id": started["job_id"], "timeout_s": 120},
            progress_callback=on_progress))
        files = structured(await client.call_tool(
            "ingest_paths", {"index": "files", "paths": [str(notes), missing]}))
        files_done = structured(await client.call_tool(
            "wait_for_job", {"job_id": files["job_id"], "timeout_s": 120}))
        hit = structured(await client.call_tool(
            "search", {"question": "Where was Marie Curie born?", "index": "files", "k": 3}))
        answered = structured(await client.call_tool(
            "answer", {"question": "Which port city is in Betaland?", "index": "notes"}))
        resources = await client.list_resources()
        document = await client.read_resource(document_uri("files", hit["passages"][0]["doc_id"]))
        return {"started": started, "waited": waited, "files": files_done, "hit": hit,
                "answered": answered,
                "resources": {str(r.uri) for r in resources.resources},
                "document": document.contents[0].text}  # type: ignore[union-attr]

    seen = run_session(stdio(settings), body)
    assert seen["started"]["state"] in ("queued", "running") and seen["started"]["next"]
    waited = seen["waited"]
    assert waited["state"] == "succeeded" and "timed_out" not in waited
    assert [e["item"] for e in waited["errors"]] == ["records.jsonl:2:text"]
    assert progress and progress[-1][:2] == (100.0, 100.0)
    assert seen["files"]["state"] == "succeeded"
    assert [(e["item"], e["reason"]) for e in seen["files"]["errors"]] == [
        (missing, "no such file or directory")]
    top = seen["hit"]["passages"][0]
    assert top["file"] == "notes.md" and top["section"] == "Marie Curie"
    assert top["cited_as"] == "notes.md, § Marie Curie"
    answered = seen["answered"]
    # IndexRAG offers cited answers, which the tool asks for: the passage is [1].
    assert answered["method"] == "indexrag" and "[1]" in answered["answer"]
    assert answered["usage"]["llm_calls"] >= 1 and answered["passages"][0]["doc_id"] == "alpha"
    assert answered["passages"][0]["cited"] is True
    assert seen["resources"] == {"hopindex://indexes/notes", "hopindex://indexes/files"}
    assert '"section": "Marie Curie"' in seen["document"]


def test_the_ingest_tools_take_an_llm_mode(start_server: Callable[..., LlmTestServer],
                                          tmp_path: Path) -> None:
    """ingest_text and ingest_paths take ``llm_mode``: the job each returns (and
    wait_for_job then) runs in the mode given, not the server's default (sync); an
    extractive index, so no LLM is called."""
    server = start_server()
    settings = Settings(data_dir=tmp_path / "data", llm_base_url=server.base_url,
                        llm_api_key="test-key", **embedder_settings(server)).resolved()
    notes = tmp_path / "notes.md"
    notes.write_text("# Alpha\n\nAlpha is a port city in Betaland.\n")
    record = {"title": "Beta", "text": "Beta is a river town."}

    async def body(client: Client) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        text = structured(await client.call_tool(
            "ingest_text", {"index": "modes", "records": [record], "llm_mode": "batch"}))
        waited = structured(await client.call_tool(
            "wait_for_job", {"job_id": text["job_id"], "timeout_s": 120}))
        paths = structured(await client.call_tool(
            "ingest_paths", {"index": "modes", "paths": [str(notes)], "llm_mode": "batch"}))
        return text, waited, paths

    text, waited, paths = run_session(stdio(settings), body)
    assert text["llm_mode"] == waited["llm_mode"] == paths["llm_mode"] == "batch"
    assert waited["state"] == "succeeded"


def test_a_paused_job_holds_the_job_slot(start_server: Callable[..., LlmTestServer],
                                                  tmp_path: Path) -> None:
    """An IndexRAG index whose budget cannot pay one call: the ingest's job pauses, which
    wait_for_job returns as it is (with what to do next); a second ingest is refused as
    busy (retryable) naming the paused job; reading a document
    that is not there is the protocol's resource-not-found error, naming the id."""
    server = start_server()
    settings = llm_settings(tmp_path / "data", server, **embedder_settings(server))
    with local_client(settings) as client:
        client.indexes.create_index("held", "indexrag")
        client.indexes.set_budget("held", BudgetLimits(max_llm_tokens=10))
    record = {"title": "Alpha", "text": "Alpha is a port city in Betaland."}

    async def body(client: Client) -> tuple[dict[str, Any], dict[str, Any], str]:
        job = structured(await client.call_tool("ingest_text",
                                                {"index": "held", "records": [record]}))
        paused = structured(await client.call_tool(
            "wait_for_job", {"job_id": job["job_id"], "timeout_s": 120}))
        busy = tool_error(await client.call_tool("ingest_text",
                                                 {"index": "held", "records": [record]}))
        with pytest.raises(MCPError) as missing:
            await client.read_resource(document_uri("held", "no such doc"))
        return paused, busy, str(missing.value)

    paused, busy, missing = run_session(stdio(settings), body)
    assert paused["state"] == "paused" and "resume" in paused["next"]
    # Without workers, the paused job keeps this process's one job slot.
    assert busy["code"] == "busy" and paused["job_id"] in busy["message"]
    assert busy["retryable"] is True
    assert missing.startswith("not_found:") and "no such doc" in missing


def test_over_a_server_ingest_paths_uploads_the_files(make_api: ApiFactory,
                                                      tmp_path: Path) -> None:
    """``hopindex mcp --api URL`` (the key in HOPINDEX_API_KEY): the tools go to the
    server, ingest_paths uploads the file named here, which the server then finds, and
    a refusal the server makes (an unknown index) reaches the agent as the same error."""
    api = make_api()
    notes = tmp_path / "notes.md"
    write_markdown(notes, CURIE_SECTIONS, title="The Curies")
    command, *args = hopindex_argv("mcp", "--api", api.url)
    env = settings_env(Settings(data_dir=tmp_path / "unused"), HOPINDEX_API_KEY=KEYS["write"])
    server = StdioServerParameters(command=command, args=args, env=env)

    async def body(client: Client) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        job = structured(await client.call_tool(
            "ingest_paths", {"index": "uploaded", "paths": [str(notes)]}))
        done = structured(await client.call_tool(
            "wait_for_job", {"job_id": job["job_id"], "timeout_s": 120}))
        hit = structured(await client.call_tool(
            "search", {"question": "Where was Marie Curie born?", "index": "uploaded"}))
        unknown = tool_error(await client.call_tool("describe_index", {"index": "nope"}))
        return done, hit, unknown

    done, hit, unknown = run_session(server, body)
    assert done["state"] == "succeeded"
    assert hit["passages"][0]["cited_as"] == "notes.md, § Marie Curie"
    assert api.service.count_documents("uploaded") == len(CURIE_SECTIONS)
    rest = api.call("GET", "/v1/indexes/nope").json()["error"]
    assert (unknown["code"], unknown["message"]) == (rest["code"], rest["message"])


def _pid_of(marker: str) -> int:
    """The process whose command line holds ``marker`` (the server this test started)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    return int(entry.name)
    raise AssertionError(f"no process with {marker!r} in its command line")


def _exited(pid: int) -> bool:
    try:  # a zombie has exited; its parent (the SDK's client) reaps it later
        return "zombie" in (Path("/proc") / str(pid) / "status").read_text()
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("stopped_by", ["stdin_closed", "sigterm"])
def test_a_job_still_running_when_the_host_stops_the_server_ends_cancelled(
        start_server: Callable[..., LlmTestServer], tmp_path: Path, stopped_by: str) -> None:
    """The host ends the session (closing stdin, as the SDK's client does) or sends
    SIGTERM while an IndexRAG ingest runs in the server: the job's record reads
    cancelled, saying the server shut down, not ``running``."""
    server = start_server(latency_s=0.5)  # each LLM call half a second: the job runs on
    settings = llm_settings(tmp_path / "data", server, **embedder_settings(server))
    marker = f"hopindex-mcp-test-{uuid.uuid4().hex}"
    command, *args = hopindex_argv("mcp")
    args[1] += f"  # {marker}"  # the -c code, so that the process can be found
    params = StdioServerParameters(command=command, args=args, env=settings_env(settings))
    records = [{"title": f"Doc {n}", "text": f"Town {n} lies on river {n} in Betaland."}
               for n in range(6)]

    async def body(client: Client) -> str:
        job = structured(await client.call_tool(
            "ingest_text", {"index": "slow", "method": "indexrag", "records": records}))

        async def running() -> bool:
            status = structured(await client.call_tool("job_status",
                                                       {"job_id": job["job_id"]}))
            return bool(status["state"] == "running" and status["llm"]["calls"] >= 1)

        while not await running():  # each read is a round trip to the server, no sleep
            pass
        if stopped_by == "sigterm":
            pid = _pid_of(marker)
            os.kill(pid, signal.SIGTERM)
            await asyncio.to_thread(wait_until, lambda: _exited(pid),
                                    what="the server to exit on SIGTERM")
        return str(job["job_id"])

    job_id = run_session(params, body)
    with local_client(settings) as client:
        job = client.jobs.get_job(job_id)
    assert job.state.value == "cancelled", (job.state, job.reason)
    assert job.reason.startswith("cancelled because the server running it shut down")
