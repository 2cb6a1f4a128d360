"""Who owns an embedded engine's folder: an OS file lock plus a record of the owner.

Qdrant Edge and tantivy allow one process per folder, and tell a second one only
``WouldBlock``. Every process that opens them claims the folder first: an exclusive
``flock`` on ``FOLDER/.hopindex-owner.lock`` (the kernel drops it when the process dies,
however it dies) and, in the same file, a JSON record of the owner (pid, host,
command, role, since). A second process is refused with ``EnginesOwnedError`` naming
that owner and the ways out. Claims within one process are counted, so the adapters of
one process (and the worker that claimed at start-up) share the folder.

Readers of the record (``find_owner``) never lock: a probe holding even a shared lock
could make a starting owner's claim fail. A record whose pid is gone is stale.
"""

from __future__ import annotations

import enum
import errno
import fcntl
import json
import os
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hopindex.core.errors import BackendUnavailableError
from hopindex.core.logging import get_logger
from hopindex.core.processes import pid_exists

log = get_logger(__name__)

# A dot: no index folder can have this name (index names start with [a-z0-9]).
LOCK_FILE = ".hopindex-owner.lock"
# A claim that meets the lock retries this long: the owner of a moment ago may be
# shutting down (a restart) while its successor starts.
CLAIM_PATIENCE_S = 1.0
_RETRY_S = 0.05
_MAX_COMMAND_CHARS = 300

WAYS_OUT = ("Only one process may open them. Route through the owner instead: with "
            "HOPINDEX_BROKER_URL set (redis://...), the worker that takes the embed queue "
            "(`hopindex worker --queues embed`, one per machine) owns the engines and every "
            "other process's queries and engine calls travel to it on the engine queue; or "
            "use server backends: HOPINDEX_VECTOR_URL=qdrant://HOST:6333 and "
            "HOPINDEX_KEYWORD_URL=elasticsearch://HOST:9200.")


class OwnerRole(enum.StrEnum):
    """Why a process holds the engines."""

    ENGINE_OWNER = "engine owner: the embed worker, serving other processes' engine calls"
    IN_PROCESS = "in-process engines (no broker)"


@dataclass(frozen=True, slots=True)
class EngineOwner:
    pid: int
    host: str
    command: str
    role: str
    since: str  # ISO 8601, UTC

    def describe(self) -> str:
        return (f"pid {self.pid} on {self.host}, `{self.command}` ({self.role}), "
                f"since {self.since}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EngineOwner:
        return cls(pid=int(data["pid"]), host=str(data["host"]), command=str(data["command"]),
                   role=str(data["role"]), since=str(data["since"]))

    @property
    def is_alive(self) -> bool:
        """False only when the pid is known dead (on this host; elsewhere we cannot tell)."""
        return self.host != socket.gethostname() or pid_exists(self.pid)


class EnginesOwnedError(BackendUnavailableError):
    """Another process holds an embedded engine's folder. Not retried: the owner does
    not go away by itself, the fix is routing through it or server backends."""

    retryable = False

    def __init__(self, engine: str, folder: Path, owner: EngineOwner | None) -> None:
        self.owner = owner
        who = owner.describe() if owner is not None else "a process that left no record"
        super().__init__(f"the embedded {engine} engine in {folder} is held by another "
                         f"process: {who}. {WAYS_OUT}")


def process_command() -> str:
    """This process's command line as a user typed it (``hopindex worker --queues embed``)."""
    argv = list(sys.argv)
    program = Path(argv[0]).name if argv else "python"
    # ``python -c "...main()" worker ...`` (tests, benchmarks) shows as -c.
    if program in ("-c", "hopindex", "__main__.py"):
        program = "hopindex"
    return " ".join([program, *argv[1:]])[:_MAX_COMMAND_CHARS]


@dataclass(slots=True)
class _Held:
    fd: int
    claims: int
    owner: EngineOwner


_held: dict[Path, _Held] = {}
_guard = threading.Lock()


def _key(folder: Path) -> Path:
    return Path(folder).expanduser().resolve()


class FolderClaim:
    """One claim on a folder; ``release`` (idempotent) gives it back."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._released = False

    def release(self) -> None:
        with _guard:
            if self._released:
                return
            self._released = True
            held = _held.get(self.folder)
            if held is None:
                return
            held.claims -= 1
            if held.claims > 0:
                return
            del _held[self.folder]
            # Cleared first: a reader that finds no record need not check a pid.
            os.ftruncate(held.fd, 0)
            fcntl.flock(held.fd, fcntl.LOCK_UN)
            os.close(held.fd)
        log.debug("engine_folder_released", folder=str(self.folder))


def claim_folder(folder: Path, engine: str,
                 role: OwnerRole = OwnerRole.IN_PROCESS) -> FolderClaim:
    """Claim ``folder`` for this process (creating it), or raise ``EnginesOwnedError``."""
    key = _key(folder)
    with _guard:
        held = _held.get(key)
        if held is not None:
            held.claims += 1
            return FolderClaim(key)
        key.mkdir(parents=True, exist_ok=True)
        fd = os.open(key / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _lock(fd)
        except BlockingIOError:
            os.close(fd)
            raise EnginesOwnedError(engine, key, _recorded_owner(key)) from None
        except BaseException:
            os.close(fd)
            raise
        owner = EngineOwner(pid=os.getpid(), host=socket.gethostname(),
                            command=process_command(), role=role.value,
                            since=datetime.now(UTC).isoformat(timespec="seconds"))
        record = json.dumps(owner.as_dict()).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)
        _held[key] = _Held(fd=fd, claims=1, owner=owner)
    log.info("engine_folder_claimed", engine=engine, folder=str(key), role=role.name)
    return FolderClaim(key)


def _lock(fd: int) -> None:
    deadline = time.monotonic() + CLAIM_PATIENCE_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            if time.monotonic() >= deadline:
                raise BlockingIOError(exc.errno, exc.strerror) from None
            time.sleep(_RETRY_S)


def held_here(folder: Path) -> EngineOwner | None:
    """This process's record when it holds ``folder``, else None."""
    with _guard:
        held = _held.get(_key(folder))
        return held.owner if held is not None else None


def find_owner(folder: Path) -> EngineOwner | None:
    """The live owner of ``folder`` (this process included), None when no one holds it.

    Reads the record only; a record of a dead process, or none, means no owner.
    """
    here = held_here(folder)
    return here if here is not None else _recorded_owner(_key(folder))


def _recorded_owner(key: Path) -> EngineOwner | None:
    try:
        text = (key / LOCK_FILE).read_text(encoding="utf-8")
    except OSError:
        return None
    if not text.strip():
        return None
    try:
        owner = EngineOwner.from_dict(json.loads(text))
    except (ValueError, KeyError, TypeError):
        return None
    return owner if owner.is_alive else None
