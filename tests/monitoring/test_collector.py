"""The Redis gauges (queue depth, jobs, units) on a real Redis, exported by one process."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from prometheus_client import CollectorRegistry

from hopindex.backends.protocols import IndexInfo
from hopindex.backends.state.redis_store import RedisStateStore
from hopindex.core.models import Job, JobKind, JobState, Unit, UnitKind
from hopindex.core.settings import Settings
from hopindex.monitoring.collector import LEASE_KEY, StateCollector
from tests.waiting import wait_until

# private_redis is a fixture: a redis-server of this module's own.
from tests.workers.conftest import private_redis  # noqa: F401

pytestmark = pytest.mark.integration


@pytest.fixture
def redis_url(private_redis: str) -> Iterator[str]:  # noqa: F811  # the imported fixture
    redis.Redis.from_url(private_redis).flushdb()
    yield private_redis


def settings_for(url: str) -> Settings:
    return Settings(broker_url=url, state_url=url)


def scrape(collector: StateCollector) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """name + sorted labels → value, through a registry as Prometheus would read it."""
    registry = CollectorRegistry()
    registry.register(collector)
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in registry.collect() for s in family.samples}


def value(samples: dict[Any, float], name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def test_queue_depth_counts_every_priority_list_and_the_unacked_hash(redis_url: str) -> None:
    """LLEN over kombu's lists of each queue (priority steps included), every queue shown
    even when empty, and the messages delivered but not yet acknowledged."""
    client = redis.Redis.from_url(redis_url)
    client.lpush("stage1", "a", "b", "c")
    client.lpush("stage1\x06\x163", "d")
    client.lpush("embed", "e", "f")
    client.hset("unacked", mapping={"tag-1": "m", "tag-2": "m"})
    samples = scrape(StateCollector(settings_for(redis_url)))
    assert value(samples, "hopindex_queue_depth", queue="stage1") == 4
    assert value(samples, "hopindex_queue_depth", queue="embed") == 2
    assert value(samples, "hopindex_queue_depth", queue="judge") == 0
    assert value(samples, "hopindex_broker_unacked_messages") == 2
    assert value(samples, "hopindex_state_exporter") == 1


def test_jobs_by_state_idle_time_and_units_follow_the_state_store(redis_url: str) -> None:
    """Jobs written by the Redis state store are counted by state (a job that finishes
    moves, a deleted one disappears); the idle gauge is the oldest running job's silence;
    units are counted per index and kind."""
    store = RedisStateStore(redis_url)
    collector = StateCollector(settings_for(redis_url))
    try:
        now = time.time()
        running = Job(job_id="job-run", index="wiki", kind=JobKind.INGEST,
                      state=JobState.RUNNING, updated_at=now - 120)
        store.create_job(running)
        store.create_job(Job(job_id="job-ok", index="wiki", kind=JobKind.INGEST,
                             state=JobState.SUCCEEDED))
        store.create_job(Job(job_id="job-bad", index="wiki", kind=JobKind.DELETE,
                             state=JobState.FAILED))
        store.create_index(IndexInfo(name="wiki", method="extractive", created_at=now))
        store.put_units([Unit(unit_id=f"u{i}", index="wiki", kind=kind, text=f"t{i}",
                              source_doc_ids=("d",), method="extractive", source_key=f"k{i}")
                         for i, kind in enumerate([UnitKind.PASSAGE] * 3 + [UnitKind.BRIDGE])])
        samples = scrape(collector)
        jobs = {s: value(samples, "hopindex_jobs", state=s.value) for s in JobState}
        assert jobs == {JobState.QUEUED: 0, JobState.RUNNING: 1, JobState.CANCELLING: 0,
                        JobState.PAUSED: 0, JobState.WAITING_ON_PROVIDER: 0,
                        JobState.SUCCEEDED: 1, JobState.SUCCEEDED_WITH_ERRORS: 0,
                        JobState.FAILED: 1, JobState.CANCELLED: 0}
        idle = value(samples, "hopindex_running_job_idle_seconds")
        assert idle is not None and 119 <= idle <= 150
        assert value(samples, "hopindex_index_units", index="wiki", kind="passage") == 3
        assert value(samples, "hopindex_index_units", index="wiki", kind="bridge") == 1

        def finish(job: Job) -> None:
            job.state = JobState.SUCCEEDED

        store.update_job("job-run", finish)
        # redis-py types replies as unions over bytes, str and more; these are bytes.
        raw: Any = redis.Redis.from_url(redis_url)
        try:
            raw.zrem("hopindex:jobs", *[m for m in raw.zrange("hopindex:jobs", 0, -1)
                                        if m.decode().endswith(":job-bad")])
        finally:
            raw.close()
        samples = scrape(collector)
        assert value(samples, "hopindex_jobs", state="succeeded") == 2
        assert value(samples, "hopindex_jobs", state="running") == 0
        assert value(samples, "hopindex_jobs", state="failed") == 0
        assert value(samples, "hopindex_running_job_idle_seconds") == 0
    finally:
        collector.close()
        store.close()


def test_only_the_lease_holder_exports_and_another_takes_over(redis_url: str) -> None:
    """Two processes scraped side by side: one exports, the other stays silent, so sums
    over instances count each queue once; when the holder closes, or stops being scraped
    past its lease, the other takes over."""
    settings = settings_for(redis_url)
    # The second's lease must outlive the step from its scrape to the next collector's
    # refusal, two local Redis round trips (a few ms; a busy 2-core machine may hold
    # this thread off the CPU for tens of ms), and then run out while the test waits:
    # 1 s is two orders of magnitude over that step and the test waits about 1 s.
    lease_s = 1.0
    first, second = StateCollector(settings), StateCollector(settings, lease_ttl_s=lease_s)
    client = redis.Redis.from_url(redis_url)
    try:
        assert scrape(first) and not scrape(second) and scrape(first)
        first.close()
        assert scrape(second) and not scrape(StateCollector(settings))
        assert 0 < client.pttl(LEASE_KEY) <= lease_s * 1000  # the second's own, short lease
        # The second is no longer scraped: its lease runs out, on Redis's clock.
        wait_until(lambda: client.exists(LEASE_KEY) == 0, what="the second's lease to run out")
        third = StateCollector(settings)
        assert scrape(third) and not scrape(second)
        third.close()
    finally:
        client.close()
        first.close()
        second.close()


def test_redis_down_leaves_the_scrape_answering() -> None:
    """No Redis: the collector exports nothing rather than failing the whole scrape."""
    collector = StateCollector(settings_for("redis://127.0.0.1:1/0"))
    registry = CollectorRegistry()
    registry.register(collector)
    assert [f for f in registry.collect() if f.samples] == []
