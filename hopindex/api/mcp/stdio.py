"""``hopindex mcp``: the MCP server on stdin and stdout, as an agent's host starts it (a
subprocess, settings from its environment), over the data dir here or, with ``--api``,
over a hopindex server.

Over a data dir without workers, the jobs the ingest and delete tools start run in
this process, one at a time (api/job_launch.py), while the tools go on answering; when
the host ends the session (closing stdin, or with SIGTERM), a job still running is
cancelled, its record saying so.
"""

from __future__ import annotations

import asyncio
import os
import signal
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

# How long a job cancelled by a signal is given to stop at its next step before the
# process ends under it (its record already reads cancelled).
JOB_STOP_GRACE_S = 5.0


class ServerJobs:
    """Jobs a server (or workers) runs: submitting returns once the job is accepted."""

    def __init__(self, offload: Offload) -> None:
        self._offload = offload

    async def launch(self, submit: Callable[[str], Job]) -> Job:
        return await self._offload(submit, new_job_id())


def serve_stdio(client: CliClient, settings: Settings) -> None:
    """Serve until the host closes stdin, or signals the process to stop."""
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
        async with anyio.create_task_group() as serving:
            serving.start_soon(_stop_on_signal, client, launcher)
            async with stdio_server() as (read, write):
                await mcp.server.run(read, write, mcp.server.create_initialization_options())
            serving.cancel_scope.cancel()
    finally:
        if warming is not None:
            await asyncio.wait({warming})
        # Both wait for threads: a job still writing, blocking calls under way.
        if launcher is not None:
            await asyncio.to_thread(launcher.close)
        await asyncio.to_thread(blocking.close)
        log.info("mcp_stopped", door=Door.STDIO.value)


async def _stop_on_signal(client: CliClient, launcher: JobLauncher | None) -> None:
    """A host that ends the server with SIGTERM (or a user's Ctrl-C) without closing
    stdin: the job still running is cancelled, its record saying why, rather than left
    reading ``running`` until a later process finds it orphaned; then the process ends.

    It ends here, not by unwinding: the SDK reads stdin on a thread that nothing can
    wake, so the serving task could never finish."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for number in signals:
            log.info("mcp_stopping", signal=signal.Signals(number).name)
            try:
                idle = True
                if launcher is not None:
                    await asyncio.to_thread(launcher.cancel_running)
                    idle = await asyncio.to_thread(launcher.wait_idle, JOB_STOP_GRACE_S)
                if idle:  # never close the engines under a job still writing
                    await asyncio.to_thread(client.close)
                log.info("mcp_stopped", door=Door.STDIO.value, job_stopped=idle)
            finally:  # whatever the clean-up met, the process ends as the signal asked
                os._exit(128 + number)


async def _warm_up(client: LocalClient, blocking: BlockingRunner) -> None:
    try:
        await blocking.run(client.warm_up_queries)
    except Exception as exc:  # the first search meets it again, and reports it
        log.warning("mcp_warm_up_failed", error_type=type(exc).__name__, error=str(exc))


def _local(_: ServerRequestContext[Any, Any]) -> Principal:
    # The host that started this process is its user: every tool, every index.
    return LOCAL_PRINCIPAL
