"""Webhook signatures, one delivery to a real HTTP receiver, and the delivery task
run eagerly from ``emit_event`` (SQLite event log, no broker)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery.exceptions import Retry

from hopindex.api.events import register_webhook
from hopindex.backends.events.sqlite_log import SqliteEventLog
from hopindex.backends.registry import Backends
from hopindex.core.events import Event, EventType, Webhook
from hopindex.core.settings import Settings
from hopindex.scheduler.events import emit_event
from hopindex.scheduler.webhooks import (
    WebhookDeliveryError,
    deliver_once,
    event_body,
    sign_body,
    verify_signature,
)
from hopindex.testing.redis_server import free_port
from hopindex.workers.app import app, configure_app
from hopindex.workers.runtime import Runtime, bind_runtime
from hopindex.workers.tasks.webhooks import MAX_RETRIES, deliver_webhook
from tests.scheduler.webhook_receiver import WebhookReceiver

SECRET = "s3cret"
EVENT = Event(event_id="42", event_type=EventType.INDEX_READY, index="curie", job_id="job-1",
              data={"units": {"passage": 6, "bridge": 2}, "failed": []}, created_at=1.5)


def webhook(url: str, secret: str = SECRET) -> Webhook:
    return Webhook(webhook_id="wh-test", index="curie", url=url, secret=secret,
                   created_at=time.time())


def test_signature_round_trips_and_detects_tampering() -> None:
    """A body's signature verifies under its secret only: a changed byte, another
    secret, or a missing or truncated header all fail."""
    body = event_body(EVENT)
    header = sign_body(SECRET, body)
    assert header.startswith("sha256=") and len(header) == len("sha256=") + 64
    assert verify_signature(SECRET, body, header)
    assert verify_signature(SECRET, body, f" {header} ")  # header whitespace is not content
    assert not verify_signature(SECRET, body.replace(b"6", b"7"), header)
    assert not verify_signature("other", body, header)
    assert not verify_signature(SECRET, body, None)
    assert not verify_signature(SECRET, body, header[:-1])
    assert not verify_signature(SECRET, body, header.removeprefix("sha256="))


def test_event_body_is_compact_sorted_json_of_the_event() -> None:
    """The signed bytes are the event's public dict, keys sorted, no spaces: a receiver
    can rebuild them only from the exact bytes it got, never from parsed JSON."""
    body = event_body(EVENT)
    assert json.loads(body) == EVENT.as_dict()
    assert b" " not in body
    assert body.startswith(b'{"created_at":1.5,"data":{"failed":[],"units":{"bridge":2')


def test_deliver_once_posts_the_signed_event() -> None:
    """A real receiver gets the body with JSON content type, the event type and id
    headers, and a signature that verifies with the webhook's secret."""
    with WebhookReceiver() as receiver:
        deliver_once(webhook(receiver.url), EVENT, timeout_s=5)
        [(body, headers)] = receiver.wait_for(lambda r: len(r) == 1, timeout_s=5)
    assert body == event_body(EVENT)
    assert headers["content-type"] == "application/json"
    assert headers["x-hopindex-event"] == "index.ready"
    assert headers["x-hopindex-event-id"] == "42"
    assert verify_signature(SECRET, body, headers["x-hopindex-signature"])


def test_a_500_answer_raises_with_status_and_url() -> None:
    """A receiver answering 500 makes the delivery a retryable error whose message
    names the status and the URL (without its query, which may hold a token)."""
    with WebhookReceiver(status=500) as receiver:
        target = webhook(receiver.url + "?token=abc")
        with pytest.raises(WebhookDeliveryError) as caught:
            deliver_once(target, EVENT, timeout_s=5)
    message = str(caught.value)
    assert caught.value.status == 500 and caught.value.retryable
    assert "HTTP 500" in message and receiver.url in message and "abc" not in message


def test_unreachable_and_slow_receivers_raise() -> None:
    """Nothing listening, and a receiver slower than the timeout, both raise
    ``WebhookDeliveryError`` with no status."""
    with pytest.raises(WebhookDeliveryError, match="request failed") as refused:
        deliver_once(webhook(f"http://127.0.0.1:{free_port()}/x"), EVENT, timeout_s=2)
    assert refused.value.status is None
    with WebhookReceiver(delay_s=1.0) as receiver:
        started = time.monotonic()
        with pytest.raises(WebhookDeliveryError, match="no answer within") as slow:
            deliver_once(webhook(receiver.url), EVENT, timeout_s=0.2)
        assert time.monotonic() - started < 1.0
    assert slow.value.status is None


@pytest.fixture
def eager_log(tmp_path: Path) -> Iterator[SqliteEventLog]:
    """An SQLite event log bound as this process's runtime, tasks running eagerly."""
    settings = Settings(data_dir=tmp_path).resolved()
    configure_app(settings)
    log = SqliteEventLog(tmp_path / "events.sqlite3")
    bind_runtime(Runtime(settings=settings, backends=Backends(settings, events=log)))
    yield log
    bind_runtime(None)
    log.close()


def test_emit_event_delivers_to_each_webhook_of_the_index(eager_log: SqliteEventLog) -> None:
    """Emitting appends the event and delivers it, signed, to each webhook of its index
    and to no other index's webhook."""
    with WebhookReceiver() as mine, WebhookReceiver() as other:
        hook = register_webhook(eager_log, "curie", mine.url, None)
        register_webhook(eager_log, "someone-else", other.url, None)
        event = emit_event(eager_log, EventType.INDEX_READY, "curie", "job-1", {"units": {}})
        [(body, headers)] = mine.wait_for(lambda r: len(r) == 1, timeout_s=5)
        time.sleep(0.2)
        assert other.received == []
    assert eager_log.get_event(event.event_id) == event
    assert json.loads(body)["id"] == event.event_id
    assert verify_signature(hook.secret, body, headers["x-hopindex-signature"])


def test_eager_delivery_tries_three_times_then_gives_up(eager_log: SqliteEventLog) -> None:
    """In eager mode a failing receiver is tried three times with short pauses, then the
    delivery is given up without failing the emitter; the event stays in the log."""
    with WebhookReceiver(status=503) as receiver:
        register_webhook(eager_log, "curie", receiver.url, None)
        started = time.monotonic()
        event = emit_event(eager_log, EventType.JOB_FAILED, "curie", "job-1",
                           {"reason": "boom"})
        elapsed = time.monotonic() - started
        assert len(receiver.received) == 3
    assert 0.6 <= elapsed < 5
    assert eager_log.read_events() == [event]


def test_a_removed_webhook_gets_nothing(eager_log: SqliteEventLog) -> None:
    """Emitting after a webhook is deleted delivers nothing to it."""
    with WebhookReceiver() as receiver:
        hook = register_webhook(eager_log, "curie", receiver.url, None)
        assert eager_log.delete_webhook(hook.webhook_id)
        emit_event(eager_log, EventType.JOB_STARTED, "curie", "job-1", {})
        time.sleep(0.2)
        assert receiver.received == []


def _run_as_worker(args: tuple[str, str], retries: int) -> None:
    """Run the task body under the request a worker builds for a delivered message."""
    deliver_webhook.push_request(id=f"task-{retries}", args=list(args), kwargs={},
                                 retries=retries, called_directly=False, is_eager=False)
    try:
        deliver_webhook.run(*args)
    finally:
        deliver_webhook.pop_request()


def test_queued_delivery_backs_off_exponentially_then_gives_up(
        eager_log: SqliteEventLog) -> None:
    """Outside eager mode a failed attempt asks Celery to retry after 2**retries seconds
    (re-queued on the in-memory broker), and the ninth failure is logged and dropped
    instead of raised."""
    with WebhookReceiver(status=500) as receiver:
        hook = register_webhook(eager_log, "curie", receiver.url, None)
        event = eager_log.append_event(EventType.INDEX_READY, "curie", "job-1", {})
        args = (hook.webhook_id, event.event_id)
        app.conf.task_always_eager = False
        try:
            for retries, countdown in ((0, 1), (3, 8), (7, 128)):
                with pytest.raises(Retry) as caught:
                    _run_as_worker(args, retries)
                assert caught.value.when == countdown
            _run_as_worker(args, MAX_RETRIES)  # gives up: no Retry, no error
        finally:
            app.conf.task_always_eager = True
            # configure_app drops the broker pool but not this cached producer pool, now
            # bound to memory://: a later test's tasks would vanish into it, not its broker.
            app.amqp._producer_pool = None
        assert len(receiver.received) == 4
