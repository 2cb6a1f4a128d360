"""How a command reaches hopindex: one ``Client`` (api/client/), the service in this
process or, with ``--api`` or HOPINDEX_API_URL, a server; each command has one body
over it.

A command that opens the embedded engines (``engines=True``) on a data dir a running
``hopindex serve`` uses (server_record.py) cannot open them beside it: it goes through
that server, as if ``--api URL`` had been given, and says so in one line on stderr;
when it cannot (the server needs an API key and none is set, or the command runs only
here) it stops before doing anything, with one line naming the server and the way
out. Commands that read and write the state alone run here as ever: SQLite takes
several processes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import click

from hopindex.api.client.protocol import Client, Indexes, IngestSource, Jobs
from hopindex.methods.registry import load_settings

if TYPE_CHECKING:
    from hopindex.api.client.local import LocalClient
    from hopindex.api.server_record import ServerRecord
    from hopindex.backends.embedder.fast_start import PreparesQueries
    from hopindex.core.budget import BudgetLimits
    from hopindex.core.models import Job
    from hopindex.core.settings import LlmMode, Settings
    from hopindex.readers.options import Reading
    from hopindex.scheduler.writers import Announce


class CliIndexes(Indexes, Protocol):
    """``client.indexes`` as the commands drive it: a job run here is told ``announce``
    (both clients take it; a server's jobs are announced by no one here)."""

    def repair_index(self, name: str, *, wait: bool = True,
                     llm_mode: LlmMode | str | None = None, job_id: str | None = None,
                     announce: Announce | None = None) -> Job: ...

    def rebuild_index(self, name: str, *, wait: bool = True,
                      llm_mode: LlmMode | str | None = None, job_id: str | None = None,
                      announce: Announce | None = None) -> Job: ...


class CliClient(Client, Protocol):
    """The client the commands get: the ``Client`` interface, plus what the command line
    shows of a job this process runs itself (its turn behind other jobs, its progress,
    a pause on its budget) and of the query embedder (a slow start's hint)."""

    @property
    def indexes(self) -> CliIndexes: ...

    @property
    def jobs(self) -> Jobs: ...

    @property
    def runs_jobs_here(self) -> bool: ...

    def embedder_to_prepare(self) -> PreparesQueries | None: ...

    def ingest(self, index: str, source: IngestSource, *, method: str | None = None,
               wait: bool = True, limits: BudgetLimits | None = None,
               reading: Reading | None = None, llm_mode: LlmMode | str | None = None,
               job_id: str | None = None, announce: Announce | None = None) -> Job: ...

    def delete_documents(self, index: str, doc_ids: Sequence[str], *, wait: bool = True,
                         job_id: str | None = None, announce: Announce | None = None
                         ) -> Job: ...


def open_client(*, engines: bool = False, planning: bool = False,
                api_url: str | None = None) -> CliClient:
    """The client of the server --api or HOPINDEX_API_URL names; else, for a command that
    opens the embedded engines (``engines``), the server that uses the data dir; else
    the service here. ``planning``: the service here is one for dry runs, which writes
    nothing on disk (not even the state file of a data dir not made yet). ``api_url``: a
    command's own ``--api`` (``hopindex mcp --api URL``), before the group's."""
    from hopindex.api.client.remote import RemoteClient

    settings = load_settings()
    url = (api_url or click.get_current_context().find_root().params.get("api_url")
           or settings.api_url)
    if url:
        return RemoteClient(url, settings.api_key)
    if engines and (server := _server(settings)) is not None:
        return _through(server, settings)
    if planning:
        from hopindex.api.client.local import LocalClient
        from hopindex.api.service import Hopindex

        return LocalClient(Hopindex.for_planning(settings))
    from hopindex.api.client.opening import open_service_client

    return open_service_client(settings)


def open_local_client() -> LocalClient:
    """The service in this process, for a command that runs only here (it opens the
    engines and drives the service's own parts): a server using the data dir stops it."""
    from hopindex.api.client.opening import open_service_client

    settings = load_settings()
    if (server := _server(settings)) is not None:
        from hopindex.api.server_record import DataDirInUseError

        command = click.get_current_context().command_path.split(" ", 1)[-1]
        raise DataDirInUseError(server, f"stop it first: `hopindex {command}` does not run "
                                        "through a server")
    return open_service_client(settings)


def _server(settings: Settings) -> ServerRecord | None:
    from hopindex.api.client.opening import owning_server

    return owning_server(settings)


def _through(server: ServerRecord, settings: Settings) -> CliClient:
    """The client of the server, announced on stderr; or the one-line refusal when it
    needs a key this process does not have (a request without one could only get a
    401)."""
    from hopindex.api.client.opening import client_through
    from hopindex.api.server_record import DataDirInUseError

    if server.needs_key and not settings.api_key:
        # The command line's own way out (--api), where the client's names the variable.
        raise DataDirInUseError(server, f"stop it, or run this command with --api "
                                        f"{server.url} and its API key in HOPINDEX_API_KEY")
    client = client_through(server, settings)
    message = (f"{server.describe()}: this command goes through it, as with --api "
               f"{server.url}")
    if click.get_current_context().params.get("as_json"):
        click.echo(json.dumps({"event": "served_data_dir", "message": message,
                               "url": server.url, "pid": server.pid,
                               "data_dir": server.data_dir}), err=True)
    else:
        click.echo(f"note: {message}", err=True)
    return client
