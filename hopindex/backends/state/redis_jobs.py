"""Job records in Redis; ``update_job`` is an atomic read-modify-write across processes.

``P:job:<id>`` is a hash: ``data`` (the job as JSON) and ``member``, the job's
entry in the sorted sets ``P:jobs`` and the index's ``jobs``. A member is
``<insertion number, zero-padded>:<job id>`` scored by ``created_at``: among jobs
created at the same instant, the later insertion sorts higher, which is SQLite's
``created_at DESC, rowid DESC``.

The index's ``openjobs`` sorted set holds the members of its unfinished jobs scored
by insertion number: the order jobs wait in for their turn on the index
(scheduler/writers.py), kept by ``create_job`` and ``update_job``.

``P:dispatch:<id>`` is a list of the job's fan-outs as JSON, newest last; ``P:scope:<id>``
the job's scope as a list of JSON pages; ``P:settled:<id>`` the set of keys its
updates were settled under (``update_job(..., once=key)``).

``update_job`` runs Python (the change callable), so it cannot be a script. It is
an optimistic WATCH/MULTI/EXEC loop, and writers of one job also take a short
lease first. The callers' changes set flags outside the job (``claimed``,
``applied``, ...) that are only right if the change ran once, against the record
it committed to; the lease makes that the normal case, and WATCH still refuses a
write whose lease expired under it, so no increment is ever lost.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import redis
from redis.client import Pipeline

from hopindex.backends.state.connection import dumps
from hopindex.backends.state.redis_connection import RedisConnection, text
from hopindex.backends.state.scope_pages import scope_of_pages, scope_pages
from hopindex.core.errors import BackendError, BackendUnavailableError, NotFoundError
from hopindex.core.logging import get_logger
from hopindex.core.models import Dispatch, Job

log = get_logger(__name__)

# Long enough for any change callable (microseconds in practice) and a slow round
# trip; short enough that a writer killed while holding it stalls the others briefly.
LEASE_TTL_MS = 10_000
# Waiting longer than a lease lives means something holds it on purpose or keeps
# retaking it: report a retryable error rather than block a worker indefinitely.
LEASE_WAIT_S = 3 * LEASE_TTL_MS / 1000
# Commits refused by WATCH; only a lease that expired mid-update causes one.
MAX_CONFLICTS = 50
_BACKOFF_MIN_S, _BACKOFF_MAX_S = 0.0005, 0.02

# KEYS: job, all jobs, the index's jobs, the insertion counter, the index's open jobs.
# ARGV: data, created_at, id, "1" when the job is unfinished.
_CREATE_JOB = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local seq = redis.call('INCR', KEYS[4])
local member = string.format('%016d', seq) .. ':' .. ARGV[3]
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'member', member)
redis.call('ZADD', KEYS[2], ARGV[2], member)
redis.call('ZADD', KEYS[3], ARGV[2], member)
if ARGV[4] == '1' then
  redis.call('ZADD', KEYS[5], seq, member)
end
return 1
"""

# KEYS: lease. ARGV: token. Releases the lease only if this writer still holds it.
_RELEASE_LEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def _job_id_of(member: str) -> str:
    return member.partition(":")[2]


def _pause(attempt: int) -> None:
    # Full jitter: contending writers spread out instead of retrying in lockstep.
    time.sleep(random.uniform(0, min(_BACKOFF_MAX_S, _BACKOFF_MIN_S * 2 ** min(attempt, 8))))


class RedisJobsMixin(RedisConnection):
    def _job_key(self, job_id: str) -> str:
        return self._key("job", job_id)

    def _jobs_key(self, index: str | None) -> str:
        return self._key("jobs") if index is None else self._base(index) + "jobs"

    def _open_key(self, index: str) -> str:
        return self._base(index) + "openjobs"

    def create_job(self, job: Job) -> None:
        """Store a new job; an id already in use is refused rather than overwritten."""
        keys = [self._job_key(job.job_id), self._jobs_key(None), self._jobs_key(job.index),
                self._key("jobseq"), self._open_key(job.index)]
        with self._errors("create_job"):
            created = self._script(_CREATE_JOB)(
                keys=keys, args=[dumps(job.as_dict()), repr(float(job.created_at)), job.job_id,
                                 "0" if job.state.is_final else "1"])
        if not created:
            raise BackendError(f"job {job.job_id} already exists")

    def get_job(self, job_id: str) -> Job | None:
        with self._errors("get_job"):
            data = text(self._redis().hget(self._job_key(job_id), "data"))
        return Job.from_dict(json.loads(data)) if data is not None else None

    def update_job(self, job_id: str, change: Callable[[Job], None], *,
                   once: str = "") -> Job:
        """Apply ``change`` to the stored job and save it, with no other writer in between.

        If ``change`` raises, nothing is written and the exception propagates.
        Raises ``BackendUnavailableError`` when the job stays leased by another
        writer past ``LEASE_WAIT_S``, ``BackendError`` after ``MAX_CONFLICTS``
        refused commits.
        """
        lease = self._key("joblease", job_id)
        token = uuid.uuid4().hex
        deadline = time.monotonic() + LEASE_WAIT_S
        for conflict in range(MAX_CONFLICTS):
            self._take_lease(lease, token, job_id, deadline)
            try:
                job = self._apply(job_id, lease, change, once)
            except BaseException:
                self._release_lease(lease, token, best_effort=True)
                raise
            if job is not None:
                return job
            self._release_lease(lease, token)
            log.warning("state_job_update_conflict", job_id=job_id, attempt=conflict + 1)
            _pause(conflict)
        raise BackendError(f"update_job: job {job_id} kept changing during "
                           f"{MAX_CONFLICTS} attempts; giving up")

    def _take_lease(self, lease: str, token: str, job_id: str, deadline: float) -> None:
        attempt = 0
        while True:
            with self._errors("update_job"):
                if self._redis().set(lease, token, nx=True, px=LEASE_TTL_MS):
                    return
            if time.monotonic() > deadline:
                raise BackendUnavailableError(
                    f"update_job: job {job_id} stayed locked by another writer for "
                    f"{LEASE_WAIT_S:.0f} s (redis state store at {self.url})")
            _pause(attempt)
            attempt += 1

    def _release_lease(self, lease: str, token: str, *, best_effort: bool = False) -> None:
        try:
            with self._errors("update_job"):
                self._script(_RELEASE_LEASE)(keys=[lease], args=[token])
        except BackendError as exc:
            if not best_effort:
                raise
            # The caller's own exception matters more; the lease expires on its own.
            log.warning("state_job_lease_not_released", lease=lease, error=str(exc))

    def _apply(self, job_id: str, lease: str, change: Callable[[Job], None],
               once: str) -> Job | None:
        """One WATCH/MULTI/EXEC attempt; None when another write got in first. The
        settled set needs no WATCH of its own: it is written only here, under the
        job key's WATCH."""
        key = self._job_key(job_id)
        settled = self._key("settled", job_id)
        with self._errors("update_job"), self._redis().pipeline(transaction=True) as pipe:
            try:
                # Watching the lease too: if it expired and another writer took it,
                # this commit (which deletes the lease) must not go through.
                pipe.watch(key, lease)  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
                data, member = (text(v) for v in pipe.hmget(key, ["data", "member"]))
                if data is None or member is None:
                    raise NotFoundError(f"job {job_id} not found")
                job = Job.from_dict(json.loads(data))
                if once and pipe.sismember(settled, once):
                    pipe.multi()
                    pipe.delete(lease)
                    pipe.execute()
                    return job
                old_index = job.index
                change(job)
                if job.job_id != job_id:
                    raise BackendError(f"update_job: the change renamed job {job_id} "
                                       f"to {job.job_id}")
                pipe.multi()
                pipe.hset(key, "data", dumps(job.as_dict()))
                if once:
                    pipe.sadd(settled, once)
                if job.index != old_index:
                    pipe.zrem(self._jobs_key(old_index), member)
                    pipe.zrem(self._open_key(old_index), member)
                pipe.zadd(self._jobs_key(None), {member: job.created_at})
                pipe.zadd(self._jobs_key(job.index), {member: job.created_at})
                if job.state.is_final:
                    pipe.zrem(self._open_key(job.index), member)
                else:
                    pipe.zadd(self._open_key(job.index), {member: int(member.partition(":")[0])})
                pipe.delete(lease)
                pipe.execute()
            except redis.WatchError:
                return None
        return job

    def list_jobs(self, index: str | None = None, limit: int = 50) -> list[Job]:
        """Jobs newest first, optionally of one index only."""
        if limit <= 0:
            return []
        with self._errors("list_jobs"):
            reply = self._redis().zrevrange(self._jobs_key(index), 0, limit - 1)
        # Without scores the reply is a list of str (decode_responses); the filter narrows
        # redis-py's union of every ZRANGE reply shape.
        members = [m for m in reply if isinstance(m, str)]

        def add(pipe: Pipeline, chunk: Sequence[str]) -> None:
            for job_id in chunk:
                pipe.hget(self._job_key(job_id), "data")

        replies = self._batched("list_jobs", [_job_id_of(m) for m in members], add)
        # A job deleted between the two reads is skipped.
        return [Job.from_dict(json.loads(data)) for data in replies if data is not None]

    def open_jobs(self, index: str) -> list[Job]:
        """The index's unfinished jobs, in the order they were created."""
        with self._errors("open_jobs"):
            reply = self._redis().zrange(self._open_key(index), 0, -1)
        members = [m for m in reply if isinstance(m, str)]

        def add(pipe: Pipeline, chunk: Sequence[str]) -> None:
            for job_id in chunk:
                pipe.hget(self._job_key(job_id), "data")

        replies = self._batched("open_jobs", [_job_id_of(m) for m in members], add)
        jobs = [Job.from_dict(json.loads(data)) for data in replies if data is not None]
        return [job for job in jobs if not job.state.is_final]

    def add_dispatch(self, job_id: str, dispatch: Dispatch) -> None:
        with self._errors("add_dispatch"):
            self._redis().rpush(self._key("dispatch", job_id), dumps(dispatch.as_dict()))

    def last_dispatch(self, job_id: str) -> Dispatch | None:
        with self._errors("last_dispatch"):
            data = text(self._redis().lindex(self._key("dispatch", job_id), -1))
        return Dispatch.from_dict(json.loads(data)) if data is not None else None

    def clear_dispatches(self, job_id: str) -> None:
        with self._errors("clear_dispatches"):
            self._redis().delete(self._key("dispatch", job_id))

    def put_job_scope(self, job_id: str, scope: Mapping[str, Any]) -> None:
        key = self._key("scope", job_id)
        with self._errors("put_job_scope"):
            pipe = self._redis().pipeline(transaction=True)
            pipe.delete(key)
            pipe.rpush(key, *scope_pages(scope))
            pipe.execute()

    def get_job_scope(self, job_id: str) -> dict[str, Any] | None:
        with self._errors("get_job_scope"):
            reply = self._redis().lrange(self._key("scope", job_id), 0, -1)
        return scope_of_pages([page for page in reply if isinstance(page, str)])

    def delete_job_scope(self, job_id: str) -> None:
        with self._errors("delete_job_scope"):
            self._redis().delete(self._key("scope", job_id))

    def settled_keys(self, job_id: str, keys: Sequence[str]) -> set[str]:
        if not keys:
            return set()
        with self._errors("settled_keys"):
            found = self._redis().smismember(self._key("settled", job_id), list(keys))
        return {key for key, there in zip(keys, found, strict=True) if there}
