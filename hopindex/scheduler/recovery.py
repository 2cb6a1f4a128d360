"""Embedded jobs whose process died: found when a service opens, failed with the reason.

Without a broker a job runs inside the process that submitted it (Celery eager
mode). When that process dies (SIGKILL, the OOM killer, SIGBUS on a full disk) no
one else runs the job, and no reaper watches embedded state, so the job would read
"running" for ever and block deleting its index. Each such job therefore records
its owner (``Job.owner``): host, pid, the kernel's boot id, the pid namespace, the
process's start time, and the name of its lease: a file in ``leases/`` beside the
SQLite state that the owner holds an exclusive ``flock`` on while it runs jobs.

When a service opens with no broker, every unfinished job whose owner is gone is
failed with a reason. Its documents not yet finalized keep an empty content hash,
so ingesting the same input again redoes just those.

An owner is judged by its lease first: the kernel drops a dead process's lock, so
a lease that can be locked is gone and one that cannot is alive, whatever pids were
reused since, and from any container that shares the data dir. With no lease file,
by its pid: on the same host and boot, in the same pid namespace, a process with
the owner's pid *and* start time is the owner; another start time is a reused pid;
another boot id means a reboot. Anything else (another host) is left alone.

Jobs without an owner, the ones sent to workers through a broker, are never
touched here: the reaper (``hopindex beat``) watches them.
"""

from __future__ import annotations

import enum
import fcntl
import json
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hopindex.core.errors import HopindexError
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobKind, JobState
from hopindex.core.processes import pid_exists
from hopindex.core.settings import Settings, url_path
from hopindex.scheduler.lifecycle import fail_job, finish_cancel
from hopindex.scheduler.runtime import Runtime

log = get_logger(__name__)

# Jobs looked at per start, newest first; unfinished jobs are few and recent.
SCAN_LIMIT = 1000
LEASE_SUFFIX = ".lease"
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
# /proc/<pid>/stat: the fields after the command name; the start time is field 22.
_START_TIME_FIELD = 19
_REDO_HINTS = {
    "ingest": "ingest the same input again to redo its unfinished documents",
    "delete": "delete the same ids again to finish it",
    "repair": "repair the index again to finish it",
    "rebuild": "rebuild the index again, or repair it, to finish it",
}


class OwnerState(enum.StrEnum):
    ALIVE = "alive"
    GONE = "gone"
    UNKNOWN = "unknown"  # on another host: nothing here can tell


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    """What tells one process from every other, a reused pid included."""

    host: str
    pid: int
    boot_id: str
    pid_namespace: str
    started: str  # clock ticks after boot; "" where /proc is not there to say

    def owner_record(self, lease: str) -> dict[str, Any]:
        return {"host": self.host, "pid": self.pid, "boot_id": self.boot_id,
                "pid_namespace": self.pid_namespace, "started": self.started, "lease": lease}

    @classmethod
    def of_owner(cls, owner: dict[str, Any]) -> ProcessIdentity:
        return cls(host=str(owner.get("host", "")), pid=int(owner.get("pid", 0)),
                   boot_id=str(owner.get("boot_id", "")),
                   pid_namespace=str(owner.get("pid_namespace", "")),
                   started=str(owner.get("started", "")))


def process_start_time(pid: int) -> str | None:
    """The process's start time in clock ticks after boot; None when there is no such
    process, "" when this system has no /proc to say."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return None
        return "" if pid_exists(pid) else None
    except OSError:
        return ""
    # The command name is in parentheses and may hold spaces or parentheses itself.
    fields = stat[stat.rfind(")") + 2:].split()
    return fields[_START_TIME_FIELD] if len(fields) > _START_TIME_FIELD else ""


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii").strip()
    except OSError:
        return ""


def _pid_namespace() -> str:
    try:
        return str(Path("/proc/self/ns/pid").readlink())
    except OSError:
        return ""


def this_process() -> ProcessIdentity:
    pid = os.getpid()
    return ProcessIdentity(host=socket.gethostname(), pid=pid, boot_id=_read(_BOOT_ID),
                           pid_namespace=_pid_namespace(),
                           started=process_start_time(pid) or "")


def lease_dir(settings: Settings) -> Path:
    """Beside the SQLite state, so every process that opens it sees the same leases;
    under the data dir for another state store."""
    if urlsplit(settings.state_url).scheme == "sqlite":
        return url_path(settings.state_url).parent / "leases"
    return settings.data_dir / "leases"


@dataclass(slots=True)
class _Lease:
    pid: int
    name: str
    fd: int
    jobs: int = 0


class _Leases:
    """This process's leases, one per lease folder, held while it runs jobs there."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Path, _Lease] = {}

    def take(self, folder: Path, me: ProcessIdentity) -> str:
        with self._lock:
            lease = self._held.get(folder)
            # A forked child inherits the dict, not the lock's ownership in spirit.
            if lease is None or lease.pid != me.pid:
                lease = self._held[folder] = _create_lease(folder, me)
            lease.jobs += 1
            return lease.name

    def give_back(self, folder: Path) -> None:
        with self._lock:
            lease = self._held.get(folder)
            if lease is None or lease.pid != os.getpid():
                return
            lease.jobs -= 1
            if lease.jobs > 0:
                return
            del self._held[folder]
            # Unlinked while still locked: a sweep that opened it meanwhile finds it
            # busy, and none can open it after.
            (folder / lease.name).unlink(missing_ok=True)
            os.close(lease.fd)


_LEASES = _Leases()


def _create_lease(folder: Path, me: ProcessIdentity) -> _Lease:
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{uuid.uuid4().hex}{LEASE_SUFFIX}"
    # Locked under a temporary name, then renamed: no sweep sees it unlocked.
    temporary = folder / f".{name}.new"
    fd = os.open(temporary, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, json.dumps(me.owner_record(name)).encode())
        temporary.rename(folder / name)
    except OSError:
        os.close(fd)
        temporary.unlink(missing_ok=True)
        raise
    return _Lease(pid=me.pid, name=name, fd=fd)


@contextmanager
def owning(settings: Settings) -> Iterator[dict[str, Any]]:
    """The owner record for a job this process runs itself (no broker), its lease held
    until the block ends; ``{}`` with a broker, where workers run the job."""
    if settings.broker_url:
        yield {}
        return
    me = this_process()
    folder = lease_dir(settings)
    try:
        lease = _LEASES.take(folder, me)
    except OSError as exc:
        # The pid check still works; only the lease's extra reach is lost.
        log.warning("job_lease_not_taken", folder=str(folder), error=str(exc))
        yield me.owner_record("")
        return
    try:
        yield me.owner_record(lease)
    finally:
        _LEASES.give_back(folder)


def _probe_lease(path: Path) -> OwnerState | None:
    """ALIVE while someone holds the lease, GONE once no one does; None without one."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return OwnerState.ALIVE
    except OSError:
        return None  # a file system without locks: the pid check decides
    finally:
        os.close(fd)
    return OwnerState.GONE


def _probe_process(owner: ProcessIdentity, here: ProcessIdentity) -> OwnerState:
    if owner.host != here.host:
        return OwnerState.UNKNOWN
    if owner.boot_id and here.boot_id and owner.boot_id != here.boot_id:
        return OwnerState.GONE  # this host rebooted since
    if owner.pid_namespace != here.pid_namespace:
        return OwnerState.UNKNOWN  # another container's pids are not ours to see
    started = process_start_time(owner.pid)
    if started is None:
        return OwnerState.GONE
    if owner.started and started and started != owner.started:
        return OwnerState.GONE  # the pid now belongs to a younger process
    return OwnerState.ALIVE


def owner_state(owner: dict[str, Any], folder: Path,
                here: ProcessIdentity | None = None) -> OwnerState:
    """Whether the process an owner record names still lives (see the module's text)."""
    here = here or this_process()
    identity = ProcessIdentity.of_owner(owner)
    if identity == here:
        return OwnerState.ALIVE
    lease = str(owner.get("lease", ""))
    if lease:
        found = _probe_lease(folder / lease)
        if found is not None:
            return found
    return _probe_process(identity, here)


def redo_hint(kind: JobKind) -> str:
    """What finishes the work of a job of ``kind`` that ended early."""
    return _REDO_HINTS.get(kind.value, "run it again")


def shutdown_reason(kind: JobKind) -> str:
    """Why a job that the server running it cancelled as it shut down ended: not a
    request, and not a process that died."""
    return f"cancelled because the server running it shut down; {redo_hint(kind)}"


def orphan_reason(job: Job) -> str:
    owner = ProcessIdentity.of_owner(job.owner)
    return (f"the process that ran it (pid {owner.pid} on {owner.host}) is gone; "
            f"{redo_hint(job.kind)}")


def recover_orphaned_jobs(runtime: Runtime) -> list[str]:
    """Fail every unfinished job whose owner process is gone (a cancelling one ends
    cancelled); returns their ids. With a broker, does nothing: workers run the jobs
    and the reaper watches them.

    Called when a service opens; an error here is logged, never allowed to stop that.
    """
    if runtime.settings.broker_url:
        return []
    folder = lease_dir(runtime.settings)
    recovered: list[str] = []
    try:
        here = this_process()
        for job in runtime.backends.state.list_jobs(limit=SCAN_LIMIT):
            if job.state.is_final or not job.owner:
                continue
            verdict = owner_state(job.owner, folder, here)
            if verdict is OwnerState.UNKNOWN:
                log.warning("job_owner_unknown", job_id=job.job_id, index=job.index,
                            owner=job.owner)
            if verdict is OwnerState.GONE and _end(runtime, job):
                recovered.append(job.job_id)
        sweep_leases(folder)
    except (HopindexError, OSError) as exc:
        log.error("job_recovery_failed", error=f"{type(exc).__name__}: {exc}")
    if recovered:
        log.warning("orphaned_jobs_failed", jobs=recovered)
    return recovered


def _end(runtime: Runtime, job: Job) -> bool:
    reason = orphan_reason(job)
    if job.state is JobState.CANCELLING:
        ended = finish_cancel(runtime, job.job_id, reason)
    else:
        ended = fail_job(runtime, job.job_id, reason)
    # None: the job was deleted meanwhile; another reason: it ended some other way.
    return ended is not None and reason in ended.reason


def sweep_leases(folder: Path) -> int:
    """Delete the leases of processes that are gone; returns how many."""
    if not folder.is_dir():
        return 0
    swept = 0
    for path in [*folder.glob(f"*{LEASE_SUFFIX}"), *folder.glob(f".*{LEASE_SUFFIX}.new")]:
        if _probe_lease(path) is OwnerState.GONE:
            path.unlink(missing_ok=True)
            swept += 1
    return swept
