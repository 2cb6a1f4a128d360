"""Driving the MCP server as an agent's host does, with the official SDK's client: one
session per call of ``session``, over a transport the test gives (a ``hopindex mcp``
subprocess, or ``/mcp`` on a test server), and the bad arguments every tool refuses."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.resources import files
from typing import Any, TypeVar

from mcp import Client
from mcp.types import CallToolResult

# The REST API's test servers (fixtures, used by name in test_http.py).
from tests.api.http.conftest import api, make_api  # noqa: F401

T = TypeVar("T")

# A session's whole run, generous for a first query that loads the embedding model.
SESSION_TIMEOUT_S = 300.0


def run_session(server: Any, body: Callable[[Client], Awaitable[T]]) -> T:
    """``body(client)`` in one MCP session with ``server`` (a transport or stdio
    parameters), the client's way: initialize, then the calls, then close."""

    async def main() -> T:
        async with asyncio.timeout(SESSION_TIMEOUT_S), Client(server) as client:
            return await body(client)

    return asyncio.run(main())


def structured(result: CallToolResult) -> dict[str, Any]:
    """A tool's JSON result, which the text content repeats for clients that read text."""
    assert isinstance(result.structured_content, dict), result
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


def tool_error(result: CallToolResult) -> dict[str, Any]:
    """The error a failed tool call carries: ``{"code", "message", "field"?, "retryable"}``,
    and the text a model reads, ``CODE: MESSAGE``."""
    assert result.is_error, result
    error: dict[str, Any] = result.structured_content["error"]  # type: ignore[index]
    assert result.content[0].text == f"{error['code']}: {error['message']}"  # type: ignore[union-attr]
    return error


@dataclass(frozen=True)
class BadCall:
    tool: str
    arguments: dict[str, Any]
    field: str  # the argument the error must name


def bad_calls(index: str) -> list[BadCall]:
    """For every tool, arguments it refuses, and the argument each refusal names."""
    ok = {"question": "Who?", "index": index}
    return [
        BadCall("search", {"index": index}, "question"),
        BadCall("search", {**ok, "question": "   "}, "question"),
        BadCall("search", {**ok, "k": 0}, "k"),
        BadCall("search", {**ok, "k": "five"}, "k"),
        BadCall("search", {**ok, "index": "Not An Index"}, "index"),
        BadCall("search", {**ok, "method": "no-such-method"}, "method"),
        # compactrag reads AKUs, which an extractive index does not hold.
        BadCall("search", {**ok, "method": "compactrag"}, "method"),
        BadCall("search", {**ok, "top": 3}, "top"),
        BadCall("answer", {"question": "Who?"}, "index"),
        BadCall("answer", ok, "method"),  # the index's default method writes no answer
        BadCall("list_indexes", {"verbose": True}, "verbose"),
        BadCall("describe_index", {}, "index"),
        BadCall("describe_index", {"index": 7}, "index"),
        BadCall("ingest_text", {"index": index}, "records"),
        BadCall("ingest_text", {"index": index, "records": []}, "records"),
        BadCall("ingest_text", {"index": index, "records": [{"title": "no text"}]},
                "records[0].text"),
        BadCall("ingest_text", {"index": index, "records": "text"}, "records"),
        BadCall("ingest_text", {"index": index, "records": [{"text": "t"}],
                                "llm_mode": "fast"}, "llm_mode"),
        BadCall("job_status", {}, "job_id"),
        BadCall("job_status", {"job_id": ""}, "job_id"),
        BadCall("wait_for_job", {"job_id": "j", "timeout_s": 0}, "timeout_s"),
        BadCall("wait_for_job", {"job_id": "j", "timeout_s": 100_000}, "timeout_s"),
        BadCall("delete_documents", {"index": index}, "doc_ids"),
        BadCall("delete_documents", {"index": index, "doc_ids": []}, "doc_ids"),
        BadCall("delete_documents", {"index": "Bad!", "doc_ids": ["a"]}, "index"),
    ]


def bad_path_calls(index: str) -> list[BadCall]:
    """ingest_paths' refusals (offered on stdio only). A path that is not there is not
    one: it fails alone on the job, as a bad record does."""
    return [
        BadCall("ingest_paths", {"index": index}, "paths"),
        BadCall("ingest_paths", {"index": index, "paths": []}, "paths"),
        BadCall("ingest_paths", {"index": index, "paths": ["a.md"], "split_by": "chapter"},
                "split_by"),
        BadCall("ingest_paths", {"index": index, "paths": ["a.md"], "include": "*.md"},
                "include"),
        BadCall("ingest_paths", {"index": index, "paths": ["a.md"], "llm_mode": "later"},
                "llm_mode"),
    ]


async def refusals(client: Client, calls: list[BadCall]) -> list[str]:
    """Each bad call made; what went wrong with those not refused as they should be (an
    empty list: every one was a tool error naming its argument)."""
    wrong: list[str] = []
    for call in calls:
        result = await client.call_tool(call.tool, call.arguments)
        if not result.is_error:
            wrong.append(f"{call.tool} {call.arguments}: accepted")
            continue
        error = tool_error(result)
        if error.get("field") != call.field or error["code"] == "internal":
            wrong.append(f"{call.tool} {call.arguments}: {error}")
    return wrong


def hotpot_question(number: int) -> tuple[str, set[str]]:
    """A bundled HotpotQA-100 question and the titles of its gold passages."""
    questions = json.loads((files("hopindex") / "sample" / "hotpotqa-100" / "questions.json")
                           .read_text())
    item = questions[number]
    return item["question"], {title for title, _ in item["supporting_facts"]}
