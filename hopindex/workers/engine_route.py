"""Which process opens the embedded engines, and how the others reach them.

- No broker (eager): the one process opens them (and claims their folders).
- A Redis broker: the worker that takes the embed queue owns them. It claims their
  folders when it starts and also takes the engine queue; every other process (the
  API, the CLI, LLM and control workers) gets engines that send each call there as a
  task and wait for its answer (engine_remote.py).
- Server engines (qdrant://, elasticsearch://) are opened by everyone, as before.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hopindex.backends.engine_calls import Answer, Engine, Request, request
from hopindex.backends.engine_lock import (
    EngineOwner,
    EnginesOwnedError,
    FolderClaim,
    OwnerRole,
    claim_folder,
    find_owner,
    held_here,
)
from hopindex.backends.engine_remote import RemoteKeywordIndex, RemoteVectorStore
from hopindex.backends.registry import Backends, embedded_engine_folders, open_backends
from hopindex.core.errors import BackendUnavailableError
from hopindex.core.logging import get_logger
from hopindex.core.settings import Settings
from hopindex.workers.query_tasks import send_and_wait
from hopindex.workers.queues import ENGINE_QUEUE, ENGINE_TASK, Queue

log = get_logger(__name__)

# One engine call is a search, a count or a batch of at most a few hundred units: far
# below this even behind the owner's running embed batches.
ENGINE_CALL_TIMEOUT_S = 30.0
_ENGINE_NAMES = {"vectors": "Qdrant Edge", "keywords": "tantivy"}
START_OWNER = ("start it with `hopindex worker --queues embed` on this machine (it owns the "
               "embedded engines and answers the engine calls of every other process), or "
               "use server backends: HOPINDEX_VECTOR_URL=qdrant://HOST:6333 and "
               "HOPINDEX_KEYWORD_URL=elasticsearch://HOST:9200")


class EngineOwnerMissingError(BackendUnavailableError):
    """Engine calls would travel to an owner, and none is running (or answering)."""


def owns_engines(settings: Settings, queues: Sequence[Queue]) -> bool:
    """A worker taking the embed queue over embedded engines owns them."""
    return Queue.EMBED in queues and bool(embedded_engine_folders(settings))


def worker_queues(settings: Settings, queues: Sequence[Queue]) -> list[str]:
    """The queues a worker consumes: its own, and the engine queue when it owns them."""
    names = [q.value for q in queues]
    return [*names, ENGINE_QUEUE] if owns_engines(settings, queues) else names


def claim_engines(settings: Settings) -> list[FolderClaim]:
    """Claim every embedded engine folder for this process (the engine owner), or raise
    ``EnginesOwnedError`` naming the process that holds one."""
    claims: list[FolderClaim] = []
    try:
        for role, folder in embedded_engine_folders(settings).items():
            claims.append(claim_folder(folder, _ENGINE_NAMES[role], OwnerRole.ENGINE_OWNER))
    except EnginesOwnedError:
        for claim in claims:
            claim.release()
        raise
    return claims


def _engine_calls_travel(settings: Settings) -> bool:
    """A Redis broker carries engine calls to the owner (the engine queue)."""
    return bool(settings.shared_redis_url(""))


def engines_in_process(settings: Settings) -> bool:
    """Whether a process that is no worker (``hopindex serve``, a CLI command) opens the
    embedded engines itself: there are some, and no broker carries calls to an owner."""
    return bool(embedded_engine_folders(settings)) and not _engine_calls_travel(settings)


def routed_folders(settings: Settings) -> dict[str, Path]:
    """Role → folder of the embedded engines this process reaches through their owner:
    all of them with a Redis broker, unless this process is the owner."""
    if not _engine_calls_travel(settings):
        return {}
    return {role: folder for role, folder in embedded_engine_folders(settings).items()
            if held_here(folder) is None}


def open_process_backends(settings: Settings) -> Backends:
    """This process's backends, the embedded engines behind their owner when it is not it."""
    routed = routed_folders(settings)
    if not routed:
        return open_backends(settings)
    channel = CeleryEngineChannel(routed)
    opened: dict[str, object] = {}
    if "vectors" in routed:
        opened["vectors"] = RemoteVectorStore(channel)
    if "keywords" in routed:
        opened["keywords"] = RemoteKeywordIndex(channel)
    return open_backends(settings, **opened)


class CeleryEngineChannel:
    """Sends engine calls to the owner on the engine queue and waits for the answers."""

    def __init__(self, folders: dict[str, Path],
                 timeout_s: float = ENGINE_CALL_TIMEOUT_S) -> None:
        self._folders = folders
        self._timeout_s = timeout_s

    def owner(self) -> EngineOwner:
        """The owner this process's calls go to, from its record; raises
        ``EngineOwnerMissingError`` at once when none is alive, rather than waiting
        out the timeout for an answer that cannot come."""
        found: EngineOwner | None = None
        for folder in self._folders.values():
            found = find_owner(folder)
            if found is None:
                raise EngineOwnerMissingError(
                    f"no engine owner is running for the embedded engines in {folder}: "
                    + START_OWNER)
        assert found is not None  # there is at least one folder
        return found

    def send_request(self, sent: Request) -> Answer:
        owner = self.owner()
        answer: Answer = send_and_wait(
            ENGINE_TASK, {"request": sent}, self._timeout_s,
            no_answer=(f"the engine owner ({owner.describe()}) did not answer "
                       f"{sent['engine']}.{sent['op']} within {self._timeout_s:g}s; its log "
                       f"says why (busy, stuck, or not taking the {ENGINE_QUEUE} queue)"))
        return answer


@dataclass(frozen=True, slots=True)
class EngineReadiness:
    """How this process reaches the engines and who owns them (for /readyz)."""

    route: str  # "this process" or the engine queue
    owner: dict[str, Any] | None

    def as_dict(self) -> dict[str, Any]:
        return {"route": self.route, "owner": self.owner}


def check_engines(settings: Settings, timeout_s: float) -> EngineReadiness | None:
    """None for server engines; else how they are reached, raising the reason when they
    cannot be: no owner answers, or another process holds what this one would open."""
    folders = embedded_engine_folders(settings)
    if not folders:
        return None
    routed = routed_folders(settings)
    if routed:
        started = time.perf_counter()
        answer = CeleryEngineChannel(routed, timeout_s).send_request(
            request(Engine.OWNER, "describe"))
        value = answer.get("value") or {}
        log.debug("engine_owner_reached", seconds=round(time.perf_counter() - started, 4))
        return EngineReadiness(route=f"{ENGINE_QUEUE} queue", owner=value.get("owner"))
    mine: EngineOwner | None = None
    for role, folder in folders.items():
        owner = find_owner(folder)
        here = held_here(folder)
        if owner is not None and here is None:
            raise EnginesOwnedError(_ENGINE_NAMES[role], folder, owner)
        mine = mine or here
    return EngineReadiness(route="this process", owner=mine.as_dict() if mine else None)
