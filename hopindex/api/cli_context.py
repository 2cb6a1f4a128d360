"""How a command reaches hopindex: the service in this process, or, with ``--api`` or
HOPINDEX_API_URL, the remote-mode commands of a server.

A command that opens the embedded engines (``engines=True``) on a data dir a running
``hopindex serve`` uses (server_record.py) cannot open them beside it: it goes through
that server, as if ``--api URL`` had been given, and says so in one line on stderr;
when it cannot (the server needs an API key and none is set, or the command has no
remote mode) it stops before doing anything, with one line naming the server and the
way out. Commands that read and write the state alone run here as ever: SQLite takes
several processes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from hopindex.methods.registry import load_settings

if TYPE_CHECKING:
    from hopindex.api.remote_cli import RemoteCommands
    from hopindex.api.server_record import ServerRecord
    from hopindex.api.service import Hopindex
    from hopindex.core.settings import Settings


def open_service(*, engines: bool = False) -> Hopindex:
    """The service in this process. ``engines``: the command opens the embedded engines,
    so a server using the data dir stops it here (it has no remote mode to go to)."""
    settings = load_settings()
    if engines and (server := _server(settings)) is not None:
        from hopindex.api.server_record import DataDirInUseError

        command = click.get_current_context().command_path.split(" ", 1)[-1]
        raise DataDirInUseError(server, f"stop it first: `hopindex {command}` does not run "
                                        "through a server")
    # Imported late so `hopindex --help` starts fast without loading torch.
    from hopindex.api.service import Hopindex

    return Hopindex(settings)


def remote_commands(*, engines: bool = False) -> RemoteCommands | None:
    """The remote-mode commands when --api or HOPINDEX_API_URL names a server, or, for a
    command that opens the embedded engines (``engines``), when a server uses the data
    dir; None: run here."""
    settings = load_settings()
    url = click.get_current_context().find_root().params.get("api_url") or settings.api_url
    if not url and engines and (server := _server(settings)) is not None:
        url = _through(server, settings)
    if not url:
        return None
    from hopindex.api.remote import ApiClient
    from hopindex.api.remote_cli import RemoteCommands

    return RemoteCommands(ApiClient(url, settings.api_key))


def _server(settings: Settings) -> ServerRecord | None:
    from hopindex.api.server_record import find_server
    from hopindex.core.logging import configure_logging

    # Before any service configures it: a stale record is noted at the level set.
    configure_logging(settings)
    return find_server(settings)


def _through(server: ServerRecord, settings: Settings) -> str:
    """The server's URL, announced on stderr; or the one-line refusal when it needs a
    key this process does not have (a request without one could only get a 401)."""
    from hopindex.api.server_record import DataDirInUseError

    if server.needs_key and not settings.api_key:
        raise DataDirInUseError(server, f"stop it, or run this command with --api "
                                        f"{server.url} and its API key in HOPINDEX_API_KEY")
    message = (f"{server.describe()}: this command goes through it, as with --api "
               f"{server.url}")
    if click.get_current_context().params.get("as_json"):
        click.echo(json.dumps({"event": "served_data_dir", "message": message,
                               "url": server.url, "pid": server.pid,
                               "data_dir": server.data_dir}), err=True)
    else:
        click.echo(f"note: {message}", err=True)
    return server.url
