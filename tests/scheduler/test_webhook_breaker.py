"""Circuit breakers (in memory, and shared through Redis) and the per-endpoint send slot
that webhook workers share through Redis."""

from __future__ import annotations

import threading
import uuid

import pytest
import redis

from hopindex.scheduler.webhook_breaker import MemoryBreaker, RedisBreaker, RedisSlots

# The Redis fixture: a running one or a private redis-server for the session.
from tests.redis_server import redis_url  # noqa: F401


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def endpoint() -> str:
    return f"https://{uuid.uuid4().hex[:12]}.example.org:443"


def test_memory_breaker_opens_after_n_failures_in_a_row_and_half_opens() -> None:
    """Failures below the threshold leave the endpoint open to attempts; the Nth opens
    the breaker for the cool-down; afterwards one failure re-opens it at once, and a
    success closes it and forgets the count. Endpoints do not share a breaker."""
    clock = Clock()
    breaker = MemoryBreaker(3, 60.0, clock=clock)
    a, b = endpoint(), endpoint()
    assert [breaker.record_failure(a) for _ in range(2)] == [False, False]
    assert breaker.blocked_for_s(a) == 0
    breaker.record_success(a)
    assert [breaker.record_failure(a) for _ in range(3)] == [False, False, True]
    assert breaker.blocked_for_s(a) == 60 and breaker.blocked_for_s(b) == 0
    clock.now += 59.5
    assert breaker.blocked_for_s(a) == 0.5
    clock.now += 1
    assert breaker.blocked_for_s(a) == 0  # half-open: one attempt may go
    assert breaker.record_failure(a) is True  # it failed: open again
    assert breaker.blocked_for_s(a) == 60
    clock.now += 60
    breaker.record_success(a)
    assert breaker.blocked_for_s(a) == 0 and breaker.record_failure(a) is False


@pytest.mark.integration
def test_redis_breaker_is_shared_between_workers(redis_url: str) -> None:  # noqa: F811
    """Two workers' breakers over one Redis count one endpoint's failures together:
    each fails once, the second failure opens it for both; a success anywhere closes it."""
    client = redis.Redis.from_url(redis_url)
    clock = Clock()
    first = RedisBreaker(client, 2, 30.0, clock=clock)
    second = RedisBreaker(redis.Redis.from_url(redis_url), 2, 30.0, clock=clock)
    target = endpoint()
    try:
        assert first.record_failure(target) is False
        assert second.record_failure(target) is True
        assert first.blocked_for_s(target) == 30 and second.blocked_for_s(target) == 30
        clock.now += 31
        assert first.blocked_for_s(target) == 0
        second.record_success(target)
        assert first.record_failure(target) is False
        keys = list(client.scan_iter("hopindex:webhook:breaker:*"))
        assert keys and not [k for k in keys if b"example.org" in k]  # hosts stay unnamed
        assert all(0 < client.ttl(k) <= 86_400 for k in keys)  # quiet endpoints expire
    finally:
        first.record_success(target)


@pytest.mark.integration
def test_redis_slot_admits_one_holder_at_a_time(redis_url: str) -> None:  # noqa: F811
    """Of eight workers racing for one endpoint's slot, exactly one gets it; a release
    with a stale token frees nothing; the slot frees itself after its hold time."""
    client = redis.Redis.from_url(redis_url)
    slots = RedisSlots(client)
    target = endpoint()
    tokens: list[str | None] = []
    lock = threading.Lock()

    def race() -> None:
        token = RedisSlots(redis.Redis.from_url(redis_url)).acquire_slot(target, 5.0)
        with lock:
            tokens.append(token)

    threads = [threading.Thread(target=race) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [t for t in tokens if t is not None]
    assert len(winners) == 1
    slots.release_slot(target, "not-the-holder")
    assert slots.acquire_slot(target, 5.0) is None
    slots.release_slot(target, winners[0])
    short = slots.acquire_slot(target, 0.2)
    assert short is not None
    threading.Event().wait(0.4)
    assert slots.acquire_slot(target, 5.0) is not None
