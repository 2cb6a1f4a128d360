"""Gauges that live in Redis, exported by exactly one process: queue depth, jobs per
state, the longest-idle running job, units per index.

Every worker and the API serve ``/metrics``, and any of them could read these from
Redis; if all did, ``sum`` over instances would count each queue many times. So
they are computed at scrape time (always fresh, no background thread) by the one
process that holds a short Redis lease: a scrape renews the holder's lease and
exports; any other process finds the lease taken and exports none of them. When the
holder stops being scraped (it died), its lease expires and the next process
scraped takes over. For the instant a hand-over overlaps, dashboards and rules read
these gauges with ``max by (...)``, which a duplicate cannot change.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import redis
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from hopindex.backends.registry import STATE_PREFIX, open_state_store
from hopindex.core.errors import HopindexError
from hopindex.core.logging import get_logger
from hopindex.core.models import JobState
from hopindex.core.settings import REDIS_SCHEMES, Settings
from hopindex.workers.queues import Queue

if TYPE_CHECKING:
    from hopindex.backends.protocols import StateStore

log = get_logger(__name__)

# Longer than any sane scrape interval, short enough that a dead holder's gauges
# come back from another process within a minute.
LEASE_TTL_S = 60.0
LEASE_KEY = f"{STATE_PREFIX}:metrics:exporter"
# Where kombu's Redis transport keeps things (kombu/transport/redis.py): one list
# per queue and priority step, and one hash of every delivered, unacknowledged message.
KOMBU_PRIORITY_STEPS = (0, 3, 6, 9)
KOMBU_PRIORITY_SEP = "\x06\x16"
KOMBU_UNACKED_KEY = "unacked"
# Where RedisStateStore keeps jobs (backends/state/redis_jobs.py, prefix "hopindex"):
# a sorted set of "<seq>:<job id>" members and one hash per job holding its JSON.
JOBS_KEY = f"{STATE_PREFIX}:jobs"
JOB_KEY = STATE_PREFIX + ":job:{}"

# KEYS: the lease. ARGV: this process's token, TTL ms. 1 when this process holds it.
_TAKE_LEASE = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""


def _is_redis(url: str) -> bool:
    return bool(url) and urlsplit(url).scheme in REDIS_SCHEMES


def _families() -> dict[str, GaugeMetricFamily]:
    return {
        "exporter": GaugeMetricFamily(
            "hopindex_state_exporter",
            "1 on the one process exporting the Redis gauges (queue depth, jobs, units)."),
        "queue": GaugeMetricFamily(
            "hopindex_queue_depth", "Messages waiting in each broker queue.",
            labels=["queue"]),
        "unacked": GaugeMetricFamily(
            "hopindex_broker_unacked_messages",
            "Messages delivered to a worker and not yet acknowledged (running or lost)."),
        "jobs": GaugeMetricFamily(
            "hopindex_jobs", "Jobs by state.", labels=["state"]),
        "idle": GaugeMetricFamily(
            "hopindex_running_job_idle_seconds",
            "Seconds since the least recently active running job last reported progress "
            "(0 when none runs)."),
        "units": GaugeMetricFamily(
            "hopindex_index_units", "Units in each index, by kind.", labels=["index", "kind"]),
    }


class StateCollector(Collector):
    """The Redis gauges of the module docstring, for ``settings``' broker and state."""

    def __init__(self, settings: Settings, *, lease_ttl_s: float = LEASE_TTL_S) -> None:
        self._broker_url = settings.broker_url if _is_redis(settings.broker_url) else ""
        self._state_url = settings.state_url if _is_redis(settings.state_url) else ""
        self._lease_ttl_ms = int(lease_ttl_s * 1000)
        self._token = uuid.uuid4().hex
        self._clients: dict[str, redis.Redis] = {}
        self._state: StateStore | None = None
        # Final jobs never change state: read each once, not at every scrape.
        self._final: dict[str, str] = {}
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return bool(self._broker_url or self._state_url)

    def describe(self) -> Iterable[Any]:
        # Names only: registering must not touch Redis.
        return list(_families().values())

    def collect(self) -> Iterator[Any]:
        if not self.enabled:
            return
        with self._lock:
            try:
                if not self.holds_lease():
                    return
                families = _families()
                families["exporter"].add_metric([], 1.0)
                if self._broker_url:
                    self._add_queues(families)
                if self._state_url:
                    self._add_jobs(families)
                    self._add_units(families)
            except (redis.RedisError, OSError, ValueError, HopindexError) as exc:
                # A scrape must still answer with the process's own metrics.
                log.warning("state_metrics_unavailable", error=str(exc))
                return
        yield from families.values()

    def holds_lease(self) -> bool:
        """Take or renew the exporter lease; True when this process holds it."""
        client = self._client(self._broker_url or self._state_url)
        held = client.eval(_TAKE_LEASE, 1, LEASE_KEY, self._token, self._lease_ttl_ms)
        return bool(held)

    def release_lease(self) -> None:
        """Give the lease up at once (a process shutting down), if this process holds it."""
        if not self.enabled:
            return
        client = self._client(self._broker_url or self._state_url)
        try:
            client.eval("if redis.call('GET', KEYS[1]) == ARGV[1] then "
                        "return redis.call('DEL', KEYS[1]) end return 0",
                        1, LEASE_KEY, self._token)
        except redis.RedisError as exc:
            log.warning("state_metrics_lease_not_released", error=str(exc))

    def close(self) -> None:
        self.release_lease()
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        if self._state is not None:
            self._state.close()
            self._state = None

    # -- the gauges ------------------------------------------------------------------
    def _add_queues(self, families: dict[str, GaugeMetricFamily]) -> None:
        client = self._client(self._broker_url)
        with client.pipeline(transaction=False) as pipe:
            for queue in Queue:
                for step in KOMBU_PRIORITY_STEPS:
                    pipe.llen(_queue_key(queue.value, step))
            pipe.hlen(KOMBU_UNACKED_KEY)
            replies = pipe.execute()
        steps = len(KOMBU_PRIORITY_STEPS)
        for i, queue in enumerate(Queue):
            depth = sum(int(n) for n in replies[i * steps:(i + 1) * steps])
            families["queue"].add_metric([queue.value], float(depth))
        families["unacked"].add_metric([], float(replies[-1]))

    def _add_jobs(self, families: dict[str, GaugeMetricFamily]) -> None:
        client = self._client(self._state_url)
        members = [m.decode() if isinstance(m, bytes) else str(m)
                   for m in client.zrange(JOBS_KEY, 0, -1)]
        job_ids = [m.partition(":")[2] for m in members]
        present = set(job_ids)
        self._final = {j: s for j, s in self._final.items() if j in present}
        unsettled = [j for j in job_ids if j not in self._final]
        records: list[Any] = []
        if unsettled:
            with client.pipeline(transaction=False) as pipe:
                for job_id in unsettled:
                    pipe.hget(JOB_KEY.format(job_id), "data")
                records = pipe.execute()
        counts = {state.value: 0 for state in JobState}
        for state in self._final.values():
            counts[state] += 1
        now, idle_s = time.time(), 0.0
        for job_id, data in zip(unsettled, records, strict=True):
            if data is None:
                continue  # deleted between the two reads
            record = json.loads(data)
            state = JobState(record["state"])
            counts[state.value] += 1
            if state.is_final:
                self._final[job_id] = state.value
            else:
                idle_s = max(idle_s, now - float(record.get("updated_at", now)))
        for state_name, count in counts.items():
            families["jobs"].add_metric([state_name], float(count))
        families["idle"].add_metric([], max(0.0, idle_s))

    def _add_units(self, families: dict[str, GaugeMetricFamily]) -> None:
        state = self._state_store()
        for info in state.list_indexes():
            for kind, count in sorted(state.count_units(info.name).items()):
                families["units"].add_metric([info.name, kind.value], float(count))

    def _client(self, url: str) -> redis.Redis:
        client = self._clients.get(url)
        if client is None:
            client = redis.Redis.from_url(url, socket_timeout=5.0, socket_connect_timeout=5.0)
            self._clients[url] = client
        return client

    def _state_store(self) -> StateStore:
        if self._state is None:
            self._state = open_state_store(self._state_url)
        return self._state


def _queue_key(queue: str, step: int) -> str:
    return f"{queue}{KOMBU_PRIORITY_SEP}{step}" if step else queue
