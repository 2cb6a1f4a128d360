"""The MCP tools: what each takes, who may call it, through which door, and what it
does with the one client.

A tool is declared once (``Tool``): its arguments' model (api/mcp/arguments.py), the
access it needs (a read key gets the read tools only), the doors that offer it, and
its body, an async function of the call and its arguments. Every body works through
the client (``Client.local`` or ``Client.connect``): the MCP server adds no rule of its
own about indexes, documents or jobs, so an agent is refused what the CLI and the
HTTP API refuse, in the same words.
"""

from __future__ import annotations

import enum
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio

from hopindex.api.access import Access, Principal, require_access, require_index_scope
from hopindex.api.job_waiting import WaitUntil
from hopindex.api.mcp import arguments as args
from hopindex.api.mcp.views import answer_view, job_view, search_view
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import Job
from hopindex.methods.base import QueryOptions
from hopindex.methods.plugin import LlmUse
from hopindex.methods.registry import default_query, get_query_method
from hopindex.readers.options import Reading

if TYPE_CHECKING:
    from hopindex.api.cli_context import CliClient

T = TypeVar("T")

# How often wait_for_job reads the job and reports progress: a notification a second
# is what an MCP client shows; the job's own record changes about as often.
PROGRESS_POLL_S = 1.0
# Query options a method offers that make its answer cite the passages it used.
_CITED_ANSWER = {"answer": "cited"}


class Door(enum.StrEnum):
    """How the agent reaches the server: the tools offered differ by door."""

    # ``hopindex mcp``: a subprocess of the agent's own host, on its machine; paths it
    # names are on that machine (read here, or uploaded to the server of --api).
    STDIO = "stdio"
    # ``/mcp`` on ``hopindex serve``: the server's files are not the agent's.
    HTTP = "http"


class Offload(Protocol):
    """Runs a blocking client call off the event loop."""

    def __call__(self, func: Callable[..., T], /, *args: Any) -> Awaitable[T]: ...


class StartsJobs(Protocol):
    """Starts a job and returns its record once it exists, the job still running
    (``api/job_launch.JobLauncher`` for a client that runs jobs in this process)."""

    async def launch(self, submit: Callable[[str], Job]) -> Job: ...


class Progress(Protocol):
    async def __call__(self, progress: float, total: float | None, message: str) -> None: ...


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call's context: the client, who calls, and how to wait and report."""

    client: CliClient
    principal: Principal
    offload: Offload
    jobs: StartsJobs
    progress: Progress


Body = Callable[[ToolCall, Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    title: str
    description: str
    arguments: type[args.ToolArguments]
    body: Body
    access: Access = Access.READ
    doors: frozenset[Door] = frozenset(Door)
    # It removes what it names (the protocol's destructive hint, for a host to confirm).
    destructive: bool = False

    def offered(self, door: Door, principal: Principal) -> bool:
        return door in self.doors and principal.access.allows(self.access)

    def input_schema(self) -> dict[str, Any]:
        return _schema_of(self.arguments)


@functools.cache
def _schema_of(arguments: type[args.ToolArguments]) -> dict[str, Any]:
    # Made once per process: every tools/list sends it (HTTP is stateless).
    return arguments.model_json_schema()


async def _query(call: ToolCall, a: args.SearchArguments, options: QueryOptions | None
                 ) -> Any:
    require_index_scope(call.principal, a.index)
    return await call.offload(lambda: call.client.query(
        a.index, a.question, method=a.method, k=a.k, options=options))


async def search(call: ToolCall, a: args.SearchArguments) -> dict[str, Any]:
    return search_view(await _query(call, a, None))


async def _index_method(call: ToolCall, index: str) -> str:
    summaries = await call.offload(call.client.indexes.list_indexes)
    for summary in summaries:
        if summary.name == index:
            return str(summary.method)
    # Asking for the description raises the not-found error every door gives.
    return str((await call.offload(call.client.indexes.describe_index, index)).method)


async def answer(call: ToolCall, a: args.AnswerArguments) -> dict[str, Any]:
    require_index_scope(call.principal, a.index)
    method = a.method or default_query(await _index_method(call, a.index))
    spec = get_query_method(method)
    if spec.llm_use is LlmUse.NONE:
        raise InvalidInputError(
            f"method {method!r} ranks passages without writing an answer; call search, or "
            "name an LLM query method that fits the index (describe_index lists them)",
            where="method")
    schema_fields = (spec.options_schema or {}).get("properties", {})
    params = _CITED_ANSWER if set(_CITED_ANSWER) <= set(schema_fields) else {}
    options = QueryOptions(k=a.k, params=params)
    return answer_view(await _query(call, a.model_copy(update={"method": method}), options))


async def list_indexes(call: ToolCall, _: args.NoArguments) -> dict[str, Any]:
    summaries = await call.offload(call.client.indexes.list_indexes)
    return {"indexes": [s.as_dict() for s in summaries if call.principal.covers(s.name)]}


async def describe_index(call: ToolCall, a: args.IndexArguments) -> dict[str, Any]:
    require_index_scope(call.principal, a.index)
    description = await call.offload(call.client.indexes.describe_index, a.index)
    return dict(description.as_dict())


async def ingest_text(call: ToolCall, a: args.IngestTextArguments) -> dict[str, Any]:
    require_index_scope(call.principal, a.index)
    records = [r.as_record() for r in a.records]
    client = call.client
    job = await call.jobs.launch(lambda job_id: client.ingest(
        a.index, records, method=a.method, wait=False, llm_mode=a.llm_mode, job_id=job_id))
    return job_view(job)


async def ingest_paths(call: ToolCall, a: args.IngestPathsArguments) -> dict[str, Any]:
    require_index_scope(call.principal, a.index)
    reading = Reading(split_by=a.split_by, include=tuple(a.include),
                      exclude=tuple(a.exclude))
    paths = [Path(p).expanduser() for p in a.paths]
    client = call.client
    job = await call.jobs.launch(lambda job_id: client.ingest(
        a.index, paths, method=a.method, wait=False, reading=reading, llm_mode=a.llm_mode,
        job_id=job_id))
    return job_view(job)


async def _job(call: ToolCall, job_id: str) -> Job:
    job = await call.offload(call.client.jobs.get_job, job_id)
    require_index_scope(call.principal, job.index)
    return job


async def job_status(call: ToolCall, a: args.JobArguments) -> dict[str, Any]:
    return job_view(await _job(call, a.job_id))


def _progress_message(job: Job) -> str:
    """``running: embed 40/100``: the state, and the first step still under way."""
    running = next((f"{stage} {counts.finished}/{counts.total}"
                    for stage, counts in job.counts.items()
                    if counts.total and counts.finished < counts.total), "")
    return job.state.value + (f": {running}" if running else "")


async def wait_for_job(call: ToolCall, a: args.WaitArguments) -> dict[str, Any]:
    """Reads the job every second until it ends, pauses on its budget or the wait runs
    out, reporting its percent as progress each time it moves.

    Not ``job_waiting.wait_for_job``: that loop sleeps on the calling thread, and a wait
    of up to ten minutes would hold one of the server's few blocking threads (the
    queries'); here only each read takes one."""
    job = await _job(call, a.job_id)
    deadline = time.monotonic() + a.timeout_s
    reported = -1.0
    while True:
        percent = float(job.progress().get("percent", 0.0))
        if percent != reported:
            await call.progress(percent, 100.0, _progress_message(job))
            reported = percent
        if WaitUntil.SETTLED.reached(job) or time.monotonic() >= deadline:
            break
        await anyio.sleep(min(PROGRESS_POLL_S, max(0.0, deadline - time.monotonic())))
        job = await call.offload(call.client.jobs.get_job, a.job_id)
    view = job_view(job)
    if not WaitUntil.SETTLED.reached(job):
        view["timed_out"] = True
    return view


async def delete_documents(call: ToolCall, a: args.DeleteArguments) -> dict[str, Any]:
    require_index_scope(call.principal, a.index)
    client = call.client
    job = await call.jobs.launch(lambda job_id: client.delete_documents(
        a.index, a.doc_ids, wait=False, job_id=job_id))
    return job_view(job)


_RETURNS_JOB = (" Returns at once with the job (job_id, state); call wait_for_job to wait for "
                "it. Documents that fail (empty text, unreadable files) fail alone and are "
                "listed in the job's errors; the rest are indexed.")

TOOLS: tuple[Tool, ...] = (
    Tool("search", "Search an index",
         "Find the passages that answer a question, across documents: hopindex links "
         "documents when it builds the index, so one search returns the evidence of a "
         "multi-hop question (a bridge from one document to the next). Each passage has "
         "its doc_id, title and text, where it is in its file (file, page, section) when "
         "it was read from one, the unit that led to it, and why it ranks. No LLM runs "
         "unless the method uses one.", args.SearchArguments, search),
    Tool("answer", "Answer a question from an index",
         "Answer a question with an LLM query method (indexrag, ircot, bridgerag, ...): "
         "the answer, citing passages by their [number], the passages it rests on, and "
         "the tokens and cost it took. Use search instead when you will read the "
         "passages yourself; answer needs a server with an LLM configured.",
         args.AnswerArguments, answer),
    Tool("list_indexes", "List indexes",
         "The indexes you can search: name, index method, creation time.",
         args.NoArguments, list_indexes),
    Tool("describe_index", "Describe an index",
         "What an index holds: documents, units per kind, status (ready, building, "
         "partial), outstanding work and running jobs.", args.IndexArguments,
         describe_index),
    Tool("ingest_text", "Add documents given inline",
         "Add documents to an index (created when new) from records you give: title, "
         "text, optional id and metadata." + _RETURNS_JOB, args.IngestTextArguments,
         ingest_text, Access.WRITE),
    Tool("ingest_paths", "Add files or folders",
         "Add files or folders on this machine to an index (created when new): PDF, "
         "HTML, DOCX, Markdown and text files, split by section by default and cited by "
         "file, page and section; JSON and JSONL records." + _RETURNS_JOB,
         args.IngestPathsArguments, ingest_paths, Access.WRITE, frozenset({Door.STDIO})),
    Tool("job_status", "Read a job",
         "An ingest or delete job's state (queued, running, waiting_on_provider, "
         "succeeded, succeeded_with_errors, failed, cancelled, paused), its progress per "
         "step, its provider batches in batch mode, and the documents that failed, with "
         "why.", args.JobArguments, job_status),
    Tool("wait_for_job", "Wait for a job",
         "Wait until a job ends (or pauses on its LLM budget), at most timeout_s seconds, "
         "reporting its progress meanwhile; returns the job as job_status does, with "
         "timed_out when it is still running.", args.WaitArguments, wait_for_job),
    Tool("delete_documents", "Delete documents",
         "Delete documents from an index by id, with everything built from them. Returns "
         "at once with the job; call wait_for_job to wait for it.", args.DeleteArguments,
         delete_documents, Access.WRITE, destructive=True),
)


def offered_tools(door: Door, principal: Principal) -> list[Tool]:
    return [tool for tool in TOOLS if tool.offered(door, principal)]


def find_tool(name: str, door: Door, principal: Principal) -> Tool:
    """The tool ``name`` as this caller may call it: unknown, or not offered through this
    door, is an unknown tool; a write tool for a read key is refused as the API does."""
    for tool in TOOLS:
        if tool.name == name and door in tool.doors:
            require_access(principal, tool.access)
            return tool
    known = ", ".join(t.name for t in offered_tools(door, principal))
    raise InvalidInputError(f"unknown tool {name!r}; tools: {known}", where="name")
