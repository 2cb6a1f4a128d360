"""The distributed state store (``redis://host:port/db``): catalog, documents, units,
entities, jobs, failed items, method-owned groups and records.

Each role lives in its own mixin module (``redis_documents``, ``redis_units``,
``redis_catalogue``, ``redis_jobs``, ``redis_failed``, ``redis_groups``); this class
adds the index catalog, whose deletion has to reach every key of the index, and
the key layout's version. Every worker process on every machine opens its own
instance against the same Redis.

``P:layout`` holds the layout version. Opening a store at an older layout upgrades
it once, under the lease ``P:layoutlease`` so that concurrent openers wait rather
than copy twice; a layout newer than this hopindex knows is refused.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import redis

from hopindex.backends.protocols import IndexInfo
from hopindex.backends.state.connection import dumps
from hopindex.backends.state.redis_catalogue import RedisCatalogueMixin
from hopindex.backends.state.redis_connection import CHUNK, text
from hopindex.backends.state.redis_documents import RedisDocumentsMixin
from hopindex.backends.state.redis_failed import RedisFailedItemsMixin
from hopindex.backends.state.redis_groups import RedisGroupsMixin
from hopindex.backends.state.redis_jobs import RedisJobsMixin
from hopindex.backends.state.redis_units import RedisUnitsMixin
from hopindex.core.errors import (
    BackendError,
    BackendUnavailableError,
    InvalidInputError,
    NotFoundError,
)
from hopindex.core.ids import validate_index_name
from hopindex.core.logging import get_logger

log = get_logger(__name__)

# 1: method-owned groups and records (the bridge catalogue and analyses copied in).
# 2: failed items under qualified phase names ("stage1" → "<method>.stage1").
LAYOUT_VERSION = 2
# The upgrade renews its lease after each index, so the lease only has to outlive
# one index's copy; an opener waits a little longer than that for a dead holder's
# lease to run out, then redoes the upgrade (every copy step is repeatable).
UPGRADE_LEASE_MS = 120_000
UPGRADE_WAIT_S = 1.25 * UPGRADE_LEASE_MS / 1000
_UPGRADE_POLL_S = 0.05
# Writers of the catalog hash are rare (index creation, deletion, options): a few
# retries of a refused WATCH are plenty.
_OPTIONS_ATTEMPTS = 20

# KEYS: lease. ARGV: token. Releases the lease only if this opener still holds it.
_RELEASE_LEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

# KEYS: the index's job list, every job. ARGV: the prefixes of a job's keys (its record
# and what is kept beside it). Jobs live outside
# the index's prefix (they are read by id alone), so they are removed by their list.
_DELETE_INDEX_JOBS = """
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, member in ipairs(members) do
  local at = string.find(member, ':', 1, true)
  local job_id = string.sub(member, at + 1)
  for _, prefix in ipairs(ARGV) do
    redis.call('DEL', prefix .. job_id)
  end
  redis.call('ZREM', KEYS[2], member)
end
redis.call('DEL', KEYS[1])
return #members
"""


def _record(method: str, created_at: float, options: dict[str, Any]) -> str:
    try:
        return dumps({"method": method, "created_at": created_at, "options": options})
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"options are not JSON-serialisable: {exc}",
                                where="options") from exc


def _info(name: str, record: str) -> IndexInfo:
    data = json.loads(record)
    return IndexInfo(name=name, method=data["method"], created_at=data["created_at"],
                     options=data["options"])


class RedisStateStore(RedisDocumentsMixin, RedisUnitsMixin, RedisCatalogueMixin,
                      RedisJobsMixin, RedisFailedItemsMixin, RedisGroupsMixin):
    """``StateStore`` on one Redis database (``RedisStateStore(url, prefix)``), safe for
    many threads, processes and machines at once; every key starts with ``prefix:``."""

    def __init__(self, url: str, prefix: str = "hopindex") -> None:
        super().__init__(url, prefix)
        try:
            with self._errors("upgrade_layout"):
                self._upgrade_layout()
        except BaseException:
            self.close()
            raise

    def _layout_version(self) -> int:
        found = int(self._redis().get(self._key("layout")) or 0)
        if found > LAYOUT_VERSION:
            raise BackendError(
                f"redis state store at {self.url} (prefix {self._prefix!r}) has layout "
                f"version {found}, newer than this hopindex understands ({LAYOUT_VERSION});"
                " upgrade hopindex to open it")
        return found

    def _upgrade_layout(self) -> None:
        """Bring the key layout up to ``LAYOUT_VERSION``, once, whoever opens first."""
        if self._layout_version() == LAYOUT_VERSION:
            return
        client = self._redis()
        lease, token = self._key("layoutlease"), uuid.uuid4().hex
        deadline = time.monotonic() + UPGRADE_WAIT_S
        while not client.set(lease, token, nx=True, px=UPGRADE_LEASE_MS):
            if self._layout_version() == LAYOUT_VERSION:
                return
            if time.monotonic() > deadline:
                raise BackendUnavailableError(
                    f"redis state store at {self.url}: another process has been upgrading "
                    f"the key layout for over {UPGRADE_WAIT_S:.0f}s")
            time.sleep(_UPGRADE_POLL_S)
        try:
            found = self._layout_version()
            if found == LAYOUT_VERSION:
                return
            started = time.perf_counter()
            # Index data is only written once the index is in the catalog, so the
            # catalog names every index with something to upgrade.
            methods = {str(text(name)): str(json.loads(str(text(record)))["method"])
                       for name, record in client.hgetall(self._key("indexes")).items()}
            done = self._upgrade_steps(found, methods, lease)
            log.info("state_layout_upgraded", url=self.url, prefix=self._prefix,
                     layout_from=found, layout_version=LAYOUT_VERSION, indexes=len(methods),
                     duration_s=round(time.perf_counter() - started, 3), **done)
        finally:
            self._script(_RELEASE_LEASE)(keys=[lease], args=[token])

    def _upgrade_steps(self, found: int, methods: dict[str, str], lease: str) -> dict[str, int]:
        """Run each layout step after ``found`` over every index (name → method) and
        stamp its version, so an interrupted upgrade resumes at the step it was in.

        The lease is renewed after each index. Returns what the steps moved.
        """
        client = self._redis()
        done = {"groups": 0, "records": 0, "failed_items": 0}
        if found < 1:
            for name in methods:
                groups, records = self._copy_legacy_index(name)
                done["groups"] += groups
                done["records"] += records
                client.pexpire(lease, UPGRADE_LEASE_MS)
            client.set(self._key("layout"), 1)
        if found < 2:
            for name, method in methods.items():
                done["failed_items"] += self._qualify_legacy_failed_items(name, method)
                client.pexpire(lease, UPGRADE_LEASE_MS)
            client.set(self._key("layout"), 2)
        return done

    def create_index(self, info: IndexInfo) -> IndexInfo:
        """Register an index; if the name exists, the stored record is returned unchanged."""
        validate_index_name(info.name)
        record = _record(info.method, info.created_at, info.options)
        key = self._key("indexes")
        with self._errors("create_index"), self._redis().pipeline(transaction=True) as pipe:
            pipe.hsetnx(key, info.name, record)
            pipe.hget(key, info.name)
            stored: str = pipe.execute()[1]
        return _info(info.name, stored)

    def get_index(self, name: str) -> IndexInfo | None:
        with self._errors("get_index"):
            record = text(self._redis().hget(self._key("indexes"), name))
        return _info(name, record) if record is not None else None

    def list_indexes(self) -> list[IndexInfo]:
        """Every index, by name."""
        with self._errors("list_indexes"):
            reply = self._redis().hgetall(self._key("indexes"))
        records = {str(text(name)): str(text(record)) for name, record in reply.items()}
        return [_info(name, records[name]) for name in sorted(records)]

    def set_index_options(self, name: str, options: dict[str, Any]) -> IndexInfo:
        """Replace the options of index ``name``; ``NotFoundError`` when there is none.

        The write is checked and set under WATCH, so an index deleted meanwhile is not
        brought back as a bare catalog entry.
        """
        key = self._key("indexes")
        with self._errors("set_index_options"), self._redis().pipeline() as pipe:
            for _ in range(_OPTIONS_ATTEMPTS):
                try:
                    pipe.watch(key)  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
                    stored = text(pipe.hget(key, name))
                    if stored is None:
                        raise NotFoundError(f"no index {name!r}")
                    current = _info(name, str(stored))
                    record = _record(current.method, current.created_at, options)
                    pipe.multi()
                    pipe.hset(key, name, record)
                    pipe.execute()
                    return IndexInfo(name=name, method=current.method,
                                     created_at=current.created_at,
                                     options=json.loads(record)["options"])
                except redis.WatchError:
                    continue
        raise BackendError(f"set_index_options: the catalog kept changing during "
                           f"{_OPTIONS_ATTEMPTS} attempts; giving up")

    def delete_index(self, name: str) -> None:
        """Remove the index and everything stored under it; unknown names are a no-op.

        Not one transaction: the catalog entry goes first, so the index stops being
        listed, then its jobs, then its keys in scan pages. A failure part-way leaves
        keys that calling ``delete_index`` again removes.
        """
        client = self._redis()
        with self._errors("delete_index"):
            client.hdel(self._key("indexes"), name)
            jobs = self._script(_DELETE_INDEX_JOBS)(
                keys=[self._jobs_key(name), self._jobs_key(None)],
                # The job's record and what is kept beside it.
                args=[self._key(family, "") for family in ("job", "settled", "scope",
                                                            "dispatch")])
            removed = 0
            batch: list[str] = []
            for key in client.scan_iter(match=self._index_pattern(name), count=CHUNK):
                batch.append(key)
                if len(batch) >= CHUNK:
                    removed += client.unlink(*batch)
                    batch = []
            if batch:
                removed += client.unlink(*batch)
        log.info("state_index_deleted", index=name, keys=removed, jobs=jobs)
