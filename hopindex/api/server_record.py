"""Which ``hopindex serve`` is using a data dir: a record it keeps there while it runs,
so that a CLI command on the same data dir goes through it instead of meeting its
engine lock.

Without a broker, ``hopindex serve`` opens the embedded engines itself (at its first
query or job), and they allow one process at a time (docs/engine-ownership.md). A CLI
command opening them too would fail with the engine-lock error, an ingest only after
it had stored its documents. So, in that set-up alone, the server writes
``DATA_DIR/server.json`` once it listens: its URL, whether it needs an API key, and
its process's identity (host, pid, boot id, pid namespace, start time; the one
scheduler/recovery.py judges job owners by). It removes the record when it stops.

A record whose process is gone (killed, the machine rebooted, the pid reused by
another program) is stale and ignored, and so is one written on another host or in
another container, whose URL is not this machine's loopback: nothing can reach that
server from here, and its engine lock, if it holds one, still says who it is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from hopindex.core.errors import BackendUnavailableError
from hopindex.core.logging import get_logger
from hopindex.core.settings import Settings
from hopindex.scheduler.recovery import OwnerState, ProcessIdentity, owner_state, this_process
from hopindex.workers.engine_route import engines_in_process

log = get_logger(__name__)

RECORD_FILE = "server.json"
# A server listening on every address is reached on loopback by the CLI beside it.
_LOOPBACK = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]"}


@dataclass(frozen=True, slots=True)
class ServerRecord:
    """A live ``hopindex serve`` on this data dir."""

    url: str
    pid: int
    needs_key: bool
    data_dir: str

    def describe(self) -> str:
        return (f"the data dir {self.data_dir} is in use by `hopindex serve` (pid {self.pid}, "
                f"{self.url})")


class DataDirInUseError(BackendUnavailableError):
    """A ``hopindex serve`` holds this data dir's embedded engines, and this command
    cannot go through it. Not retried: the server does not go away by itself."""

    retryable = False

    def __init__(self, server: ServerRecord, way_out: str) -> None:
        self.server = server
        super().__init__(f"{server.describe()}: {way_out}")


def record_path(settings: Settings) -> Path:
    return Path(settings.data_dir).expanduser().resolve() / RECORD_FILE


def find_server(settings: Settings) -> ServerRecord | None:
    """The live server whose engines this process would meet on opening its own: None
    with a broker or server engines (nothing is opened in-process then), without a
    record, or with a stale one."""
    if not engines_in_process(settings):
        return None
    path = record_path(settings)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        record = ServerRecord(url=str(data["url"]), pid=int(data["process"]["pid"]),
                              needs_key=bool(data["needs_key"]), data_dir=str(path.parent))
        process = dict(data["process"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # Not as a server writes it (the write is a rename, so never half of one):
        # damaged or edited, it names no server to go to.
        log.debug("server_record_unreadable", path=str(path), error=repr(exc))
        return None
    # The record names no lease: the process is judged by its identity alone.
    state = owner_state(process, path.parent)
    if state is not OwnerState.ALIVE:
        log.debug("server_record_ignored", path=str(path), pid=record.pid, state=state.value)
        return None
    return record


@contextmanager
def recording_server(settings: Settings) -> Iterator[Callable[[str, bool], None]]:
    """For ``hopindex serve``: refuses to start beside a live server of the same data
    dir, and yields ``publish(url, needs_key)``, which writes the record once the server
    listens; the record is removed on the way out if it is still this process's."""
    if not engines_in_process(settings):
        yield lambda url, needs_key: None
        return
    if (running := find_server(settings)) is not None:
        raise DataDirInUseError(running, "stop it, or serve another data dir "
                                         "(HOPINDEX_DATA_DIR)")
    path = record_path(settings)
    me = this_process()

    def publish(url: str, needs_key: bool) -> None:
        record = {"url": local_url(url), "needs_key": needs_key,
                  "since": datetime.now(UTC).isoformat(timespec="seconds"),
                  "process": me.owner_record(lease="")}
        path.parent.mkdir(parents=True, exist_ok=True)
        written = path.with_name(f".{RECORD_FILE}.{me.pid}.new")
        written.write_text(json.dumps(record), encoding="utf-8")
        # Renamed into place: a reader sees the whole record or none.
        written.replace(path)
        log.info("server_record_written", path=str(path), url=record["url"])

    try:
        yield publish
    finally:
        _remove_if_mine(path, me)


def _remove_if_mine(path: Path, me: ProcessIdentity) -> None:
    """A second server may have replaced the record after this one's died unnoticed:
    only this process's own record is removed."""
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        mine = ProcessIdentity.of_owner(data["process"]) == me
    except (OSError, ValueError, KeyError, TypeError):
        return
    if mine:
        path.unlink(missing_ok=True)


def local_url(url: str) -> str:
    """``url`` as a process on this machine reaches it: an any-address host becomes
    loopback."""
    parts = urlsplit(url)
    host, _, port = parts.netloc.rpartition(":")
    if host in _LOOPBACK:
        return urlunsplit(parts._replace(netloc=f"{_LOOPBACK[host]}:{port}"))
    return url
