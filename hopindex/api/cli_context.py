"""How a command reaches hopindex: the service in this process, or, with ``--api`` or
HOPINDEX_API_URL, the remote-mode commands of a server."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from hopindex.methods.registry import load_settings

if TYPE_CHECKING:
    from hopindex.api.remote_cli import RemoteCommands
    from hopindex.api.service import Hopindex


def open_service() -> Hopindex:
    # Imported late so `hopindex --help` starts fast without loading torch.
    from hopindex.api.service import Hopindex

    return Hopindex(load_settings())


def remote_commands() -> RemoteCommands | None:
    """The remote-mode commands when --api or HOPINDEX_API_URL names a server."""
    settings = load_settings()
    url = click.get_current_context().find_root().params.get("api_url") or settings.api_url
    if not url:
        return None
    from hopindex.api.remote import ApiClient
    from hopindex.api.remote_cli import RemoteCommands

    return RemoteCommands(ApiClient(url, settings.api_key))
