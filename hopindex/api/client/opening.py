"""How a client is opened: in this process, through the server that owns the data dir,
or to a server named by URL."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from hopindex.core.errors import ConfigError

if TYPE_CHECKING:
    from hopindex.api.client.local import LocalClient
    from hopindex.api.client.remote import RemoteClient
    from hopindex.api.server_record import ServerRecord
    from hopindex.core.settings import Settings


def local_settings(data_dir: Path | str | None, settings: Settings | None) -> Settings:
    """``settings``, or the environment's with ``data_dir`` as the data folder (the
    embedded backends' URLs follow it)."""
    from hopindex.methods.registry import load_settings

    if settings is not None:
        if data_dir is not None:
            raise ConfigError("give data_dir or settings, not both: settings carry their "
                              "own data_dir")
        return settings
    if data_dir is None:
        return load_settings()
    return load_settings({**os.environ, "HOPINDEX_DATA_DIR": str(data_dir)})


def owning_server(settings: Settings) -> ServerRecord | None:
    """The running ``hopindex serve`` whose embedded engines this process would meet."""
    from hopindex.api.server_record import find_server
    from hopindex.core.logging import configure_logging

    # Before any service configures it: a stale record is noted at the level set.
    configure_logging(settings)
    return find_server(settings)


def client_through(server: ServerRecord, settings: Settings) -> RemoteClient:
    """The client of the server that owns the data dir; refused (``DataDirInUseError``)
    when it needs a key and none is set, since every request would get a 401."""
    from hopindex.api.client.remote import RemoteClient
    from hopindex.api.server_record import DataDirInUseError

    if server.needs_key and not settings.api_key:
        raise DataDirInUseError(server, f"stop it, or go through it with its API key in "
                                        f"HOPINDEX_API_KEY (--api {server.url})")
    return RemoteClient(server.url, settings.api_key)


def open_service_client(settings: Settings) -> LocalClient:
    """The service in this process, whatever else uses the data dir."""
    # Imported here so `import hopindex` and `hopindex --help` never load the runtime.
    from hopindex.api.client.local import LocalClient
    from hopindex.api.service import Hopindex

    return LocalClient(Hopindex(settings))


def open_local(data_dir: Path | str | None = None, *, settings: Settings | None = None,
               through_server: bool = True) -> LocalClient | RemoteClient:
    """``Client.local``: see there."""
    from hopindex.api.server_record import DataDirInUseError

    chosen = local_settings(data_dir, settings)
    server = owning_server(chosen)
    if server is not None:
        if not through_server:
            raise DataDirInUseError(server, "stop it first, or let this client go through it")
        return client_through(server, chosen)
    return open_service_client(chosen)


def open_remote(url: str, *, api_key: str = "", timeout_s: float | None = None
                ) -> RemoteClient:
    from hopindex.api.client.remote import RemoteClient

    return RemoteClient(url, api_key, timeout_s)
