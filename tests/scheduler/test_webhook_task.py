"""The delivery task as a worker runs it with a Redis broker: one attempt per run, the
next step sent back to the ``webhooks`` queue with a countdown (retry, breaker, slot),
and the endpoint's breaker and slot shared through Redis."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
import standardwebhooks

from hopindex.api.events import register_webhook
from hopindex.backends.events.sqlite_log import SqliteEventLog
from hopindex.backends.registry import Backends
from hopindex.core.events import EventType
from hopindex.core.settings import Settings
from hopindex.scheduler.webhook_breaker import RedisSlots
from hopindex.scheduler.webhook_delivery import endpoint_of
from hopindex.workers.app import configure_app
from hopindex.workers.runtime import Runtime, bind_runtime
from hopindex.workers.tasks.webhooks import deliver_webhook
from tests.scheduler.webhook_receiver import WebhookReceiver

# A private redis-server per module: these tests read the broker's queues.
from tests.workers.conftest import private_redis  # noqa: F401

pytestmark = pytest.mark.integration


@dataclass
class Worker:
    settings: Settings
    log: SqliteEventLog
    client: redis.Redis

    def run(self, webhook_id: str, event_id: str, attempt: int = 1) -> str:
        """The task body under the request a worker builds for a delivered message."""
        deliver_webhook.push_request(id=f"task-{attempt}", args=[webhook_id, event_id],
                                     kwargs={"attempt": attempt}, retries=0,
                                     called_directly=False, is_eager=False)
        try:
            outcome: str = deliver_webhook.run(webhook_id, event_id, attempt)
            return outcome
        finally:
            deliver_webhook.pop_request()

    def queued(self, queue: str = "webhooks") -> list[tuple[dict[str, Any], float]]:
        """The messages waiting on ``queue``: (kwargs, seconds until their ETA)."""
        found = []
        for raw in self.client.lrange(queue, 0, -1):
            message = json.loads(raw)
            _args, kwargs, _embed = json.loads(base64.b64decode(message["body"]))
            eta = message["headers"]["eta"]
            wait_s = (time.mktime(time.strptime(eta[:19], "%Y-%m-%dT%H:%M:%S"))
                      - time.mktime(time.gmtime())) if eta else 0.0
            found.append((kwargs, wait_s))
        return found


@pytest.fixture
def worker(tmp_path: Path, private_redis: str) -> Iterator[Worker]:  # noqa: F811
    client = redis.Redis.from_url(private_redis)
    client.flushdb()
    settings = Settings(data_dir=tmp_path, broker_url=private_redis,
                        state_url=f"sqlite://{tmp_path / 'state.sqlite3'}",
                        webhook_allow_private=True, webhook_read_timeout_s=1.0,
                        webhook_breaker_failures=2, webhook_breaker_cooldown_s=30.0).resolved()
    configure_app(settings)
    log = SqliteEventLog(tmp_path / "events.sqlite3")
    bind_runtime(Runtime(settings=settings, backends=Backends(settings, events=log)))
    yield Worker(settings, log, client)
    bind_runtime(None)
    log.close()
    configure_app(Settings(data_dir=tmp_path).resolved())


def test_a_delivery_runs_once_and_verifies(worker: Worker) -> None:
    """A healthy receiver gets one signed POST (verified by the library); nothing is
    queued after it."""
    with WebhookReceiver() as receiver:
        hook = register_webhook(worker.log, "curie", receiver.url, None, allow_private=True)
        event = worker.log.append_event(EventType.INDEX_READY, "curie", "job-1", {})
        assert worker.run(hook.webhook_id, event.event_id) == "delivered"
        [(body, headers)] = receiver.received
    assert standardwebhooks.Webhook(hook.secret).verify(body, headers)["id"] == event.event_id
    assert worker.queued() == []


def test_a_failed_attempt_is_sent_back_to_the_webhooks_queue(worker: Worker) -> None:
    """A 500 is one attempt: the next is a message on the webhooks queue (not control)
    carrying attempt 2 and a countdown of about the backoff; the last attempt gives up
    and queues nothing."""
    with WebhookReceiver(status=500) as receiver:
        hook = register_webhook(worker.log, "curie", receiver.url, None, allow_private=True)
        event = worker.log.append_event(EventType.JOB_FAILED, "curie", "job-1", {})
        assert worker.run(hook.webhook_id, event.event_id) == "failed"
        [(kwargs, wait_s)] = worker.queued()
        assert kwargs == {"attempt": 2} and -1 <= wait_s <= 3
        assert worker.queued("control") == []
        worker.client.delete("webhooks")
        last = worker.settings.webhook_max_attempts
        assert worker.run(hook.webhook_id, event.event_id, attempt=last) == "gave_up"
        assert worker.queued() == [] and len(receiver.received) == 2


def test_an_open_breaker_defers_without_a_request(worker: Worker) -> None:
    """After two failures in a row the endpoint's breaker is open: the next run makes no
    request and queues the same attempt for the end of the cool-down."""
    with WebhookReceiver(status=503) as receiver:
        hook = register_webhook(worker.log, "curie", receiver.url, None, allow_private=True)
        first, second, third = (worker.log.append_event(EventType.JOB_PROGRESS, "curie",
                                                        "job-1", {"i": i}) for i in range(3))
        assert worker.run(hook.webhook_id, first.event_id) == "failed"
        assert worker.run(hook.webhook_id, second.event_id) == "failed"
        worker.client.delete("webhooks")
        assert worker.run(hook.webhook_id, third.event_id, attempt=1) == "deferred"
        assert len(receiver.received) == 2
    [(kwargs, wait_s)] = worker.queued()
    assert kwargs == {"attempt": 1} and 25 <= wait_s <= 33


def test_a_busy_endpoint_slot_defers_without_a_request(worker: Worker) -> None:
    """While another worker holds the endpoint's slot, a run sends nothing and comes
    back in about a second with its attempt unspent."""
    with WebhookReceiver() as receiver:
        hook = register_webhook(worker.log, "curie", receiver.url, None, allow_private=True)
        event = worker.log.append_event(EventType.JOB_STARTED, "curie", "job-1", {})
        slots = RedisSlots(worker.client)
        token = slots.acquire_slot(endpoint_of(hook), 30.0)
        assert token is not None
        assert worker.run(hook.webhook_id, event.event_id, attempt=3) == "deferred"
        assert receiver.received == []
        [(kwargs, wait_s)] = worker.queued()
        assert kwargs == {"attempt": 3} and -1 <= wait_s <= 3
        slots.release_slot(endpoint_of(hook), token)
        assert worker.run(hook.webhook_id, event.event_id, attempt=3) == "delivered"
