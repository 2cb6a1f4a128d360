"""``hopindex mcp``: the MCP server on stdin and stdout, as an agent's host starts it (a
subprocess, settings from its environment), over the data dir here or, with ``--api``,
over a hopindex server.

Over a data dir without workers, the jobs the ingest and delete tools start run in
this process, one at a time (api/job_launch.py), while the tools go on answering; when
the host ends the session, a job still running is cancelled, its record saying so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server

from hopindex.api.access import LOCAL_PRINCIPAL, Principal
from hopindex.api.blocking import BlockingRunner
from hopindex.api.client.local import LocalClient
from hopindex.api.job_launch import JobLauncher
from hopindex.api.mcp.server import McpServer
from hopindex.api.mcp.tools import Door, Offload
from hopindex.core.ids import job_id as new_job_id
from hopindex.core.logging import get_logger
from hopindex.core.models import Job

if TYPE_CHECKING:
    from hopindex.api.cli_context import CliClient
    from hopindex.core.settings import Settings

log = get_logger(__name__)


class ServerJobs:
    """Jobs a server (or workers) runs: submitting returns once the job is accepted."""

    def __init__(self, offload: Offload) -> None:
        self._offload = offload

    async def launch(self, submit: Callable[[str], Job]) -> Job:
        return await self._offload(submit, new_job_id())


def serve_stdio(client: CliClient, settings: Settings) -> None:
    """Serve until the host closes stdin."""
    anyio.run(_serve, client, settings)


async def _serve(client: CliClient, settings: Settings) -> None:
    blocking = BlockingRunner(settings.api_concurrency, name="hopindex-mcp")
    launcher = (JobLauncher(client, blocking)
                if isinstance(client, LocalClient) and client.runs_jobs_here else None)
    mcp = McpServer(client, door=Door.STDIO, offload=blocking.run,
                    jobs=launcher or ServerJobs(blocking.run),
                    principal_of=_local, max_question_chars=settings.api_max_query_chars)
    log.info("mcp_serving", door=Door.STDIO.value, remote=client.is_remote)
    # A host starts its servers when it starts, and an agent's first search comes later:
    # the query embedder loads meanwhile, so that search takes its own time only.
    warming = (asyncio.ensure_future(_warm_up(client, blocking))
               if isinstance(client, LocalClient) else None)
    try:
        async with stdio_server() as (read, write):
            await mcp.server.run(read, write, mcp.server.create_initialization_options())
    finally:
        if warming is not None:
            await asyncio.wait({warming})
        # Both wait for threads: a job still writing, blocking calls under way.
        if launcher is not None:
            await asyncio.to_thread(launcher.close)
        await asyncio.to_thread(blocking.close)
        log.info("mcp_stopped", door=Door.STDIO.value)


async def _warm_up(client: LocalClient, blocking: BlockingRunner) -> None:
    try:
        await blocking.run(client.warm_up_queries)
    except Exception as exc:  # the first search meets it again, and reports it
        log.warning("mcp_warm_up_failed", error_type=type(exc).__name__, error=str(exc))


def _local(_: ServerRequestContext[Any, Any]) -> Principal:
    # The host that started this process is its user: every tool, every index.
    return LOCAL_PRINCIPAL
