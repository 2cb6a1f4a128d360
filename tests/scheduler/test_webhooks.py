"""Webhook signatures (Standard Webhooks, checked by the ``standardwebhooks`` library),
secrets, one delivery to a real HTTP receiver, and deliveries from ``emit_event`` in a
process with no broker (SQLite event log, background sender)."""

from __future__ import annotations

import base64
import ipaddress
import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import standardwebhooks

from hopindex.api.events import register_webhook
from hopindex.backends.events.sqlite_log import SqliteEventLog
from hopindex.backends.registry import Backends
from hopindex.core.events import Event, EventType, Webhook
from hopindex.core.settings import Settings
from hopindex.scheduler.events import emit_event
from hopindex.scheduler.webhook_sender import close_embedded_senders, embedded_sender
from hopindex.scheduler.webhook_targets import IPAddress, WebhookTargetRefusedError
from hopindex.scheduler.webhooks import (
    DeliveryOptions,
    WebhookDeliveryError,
    deliver_once,
    event_body,
    new_secret,
    normalize_secret,
    sign_body,
    signed_headers,
    standard_secret,
    verify_signature,
)
from hopindex.testing.redis_server import free_port
from hopindex.workers.app import configure_app
from hopindex.workers.runtime import Runtime, bind_runtime, current_runtime
from tests.scheduler.webhook_receiver import WebhookReceiver
from tests.waiting import wait_until

SECRET = new_secret()
EVENT = Event(event_id="42", event_type=EventType.INDEX_READY, index="curie", job_id="job-1",
              data={"units": {"passage": 6, "bridge": 2}, "failed": []}, created_at=1.5)
# The receivers in these tests listen on loopback, which webhooks may reach only so.
LOCAL = DeliveryOptions(connect_timeout_s=2, read_timeout_s=2, allow_private=True)


def webhook(url: str, secret: str = SECRET) -> Webhook:
    return Webhook(webhook_id="wh-test", index="curie", url=url, secret=secret,
                   created_at=time.time())


def verify(secret: str, body: bytes, headers: dict[str, str]) -> object:
    """What a receiver does: the Standard Webhooks library's own check."""
    return standardwebhooks.Webhook(secret).verify(body, headers)


# -- signatures and secrets ------------------------------------------------------------
def test_standard_signature_verifies_with_the_library() -> None:
    """The headers of a delivery verify with the standardwebhooks library under the
    webhook's secret and give back the event."""
    body = event_body(EVENT)
    headers = signed_headers(webhook("https://h/x"), EVENT, body, int(time.time()))
    assert headers["webhook-signature"].startswith("v1,")
    assert verify(SECRET, body, headers) == EVENT.as_dict()


def test_library_rejects_wrong_secret_tampering_replay_and_old_timestamps() -> None:
    """Another secret, a changed byte, another message id (a replay of the signature
    on another message) and a timestamp six minutes old all fail verification; five
    minutes is the tolerance receivers apply."""
    body = event_body(EVENT)
    now = int(time.time())
    headers = signed_headers(webhook("https://h/x"), EVENT, body, now)
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        verify(new_secret(), body, headers)
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        verify(SECRET, body.replace(b"6", b"7"), headers)
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        verify(SECRET, body, {**headers, "webhook-id": "wh-test_43"})
    old = signed_headers(webhook("https://h/x"), EVENT, body, now - 360)
    with pytest.raises(standardwebhooks.WebhookVerificationError, match="too old"):
        verify(SECRET, body, old)
    # The timestamp is signed: moving it forward breaks the signature.
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        verify(SECRET, body, {**old, "webhook-timestamp": str(now)})
    assert verify(SECRET, body, signed_headers(webhook("https://h/x"), EVENT, body,
                                               now - 240)) == EVENT.as_dict()


def test_a_secret_from_before_the_whsec_form_keeps_working() -> None:
    """A webhook stored with a free-text secret signs with its UTF-8 bytes: the old
    X-Hopindex-Signature still verifies under the old text, and the standard header
    under ``whsec_`` + base64 of it (what the API shows)."""
    old = "s3cret-from-last-release"
    body = event_body(EVENT)
    headers = signed_headers(webhook("https://h/x", secret=old), EVENT, body, int(time.time()))
    shown = standard_secret(old)
    assert shown == "whsec_" + base64.b64encode(old.encode()).decode()
    assert verify(shown, body, headers) == EVENT.as_dict()
    assert verify_signature(old, body, headers["X-Hopindex-Signature"])
    assert not verify_signature("other", body, headers["X-Hopindex-Signature"])


def test_legacy_body_signature_round_trips_and_detects_tampering() -> None:
    """The deprecated body-only signature verifies under its secret only."""
    body = event_body(EVENT)
    header = sign_body(SECRET, body)
    assert header.startswith("sha256=") and len(header) == len("sha256=") + 64
    assert verify_signature(SECRET, body, header)
    assert verify_signature(SECRET, body, f" {header} ")
    assert not verify_signature(SECRET, body.replace(b"6", b"7"), header)
    assert not verify_signature(new_secret(), body, header)
    assert not verify_signature(SECRET, body, None)
    assert not verify_signature(SECRET, body, header[:-1])


def whsec(key: bytes) -> str:
    return "whsec_" + base64.b64encode(key).decode()


@pytest.mark.parametrize(("given", "kept"), [
    (whsec(b"k" * 24), whsec(b"k" * 24)),
    (whsec(b"k" * 64), whsec(b"k" * 64)),
    ("mine", whsec(b"mine")),
    ("caf\u00e9 secret", whsec("caf\u00e9 secret".encode())),
])
def test_given_secrets_are_kept_in_whsec_form(given: str, kept: str) -> None:
    """A whsec_ secret is kept as given; other text becomes whsec_ + base64 of its bytes."""
    assert normalize_secret(given) == kept


@pytest.mark.parametrize("bad", ["", "   ", "whsec_", "whsec_not base64!",
                                 "whsec_" + base64.b64encode(b"k" * 23).decode(),
                                 "whsec_" + base64.b64encode(b"k" * 65).decode(),
                                 "whsec_" + base64.b64encode(b"k" * 31).decode().rstrip("=")])
def test_bad_secrets_are_refused(bad: str) -> None:
    """Blank text and whsec_ secrets that are not base64 of 24 to 64 bytes are refused."""
    with pytest.raises(ValueError):
        normalize_secret(bad)


def test_random_secrets_are_32_bytes_in_whsec_form() -> None:
    """A made-up secret is whsec_ + base64 of 32 random bytes, different each time."""
    first, second = new_secret(), new_secret()
    assert first != second and normalize_secret(first) == first
    assert len(base64.b64decode(first.removeprefix("whsec_"))) == 32


def test_event_body_is_compact_sorted_json_of_the_event() -> None:
    """The signed bytes are the event's public dict, keys sorted, no spaces."""
    body = event_body(EVENT)
    assert json.loads(body) == EVENT.as_dict()
    assert b" " not in body
    assert body.startswith(b'{"created_at":1.5,"data":{"failed":[],"units":{"bridge":2')


# -- one attempt -----------------------------------------------------------------------
def test_deliver_once_posts_the_signed_event() -> None:
    """A real receiver gets the body as JSON with the three Standard Webhooks headers
    (verified by the library), the deprecated signature and the event headers; two
    attempts carry the same webhook-id."""
    with WebhookReceiver() as receiver:
        assert deliver_once(webhook(receiver.url), EVENT, LOCAL) == 200
        deliver_once(webhook(receiver.url), EVENT, LOCAL)
        [(body, headers), (_, again)] = receiver.wait_for(lambda r: len(r) == 2, timeout_s=5)
    assert body == event_body(EVENT)
    assert headers["content-type"] == "application/json"
    assert headers["webhook-id"] == again["webhook-id"] == "wh-test_42"
    assert abs(int(headers["webhook-timestamp"]) - time.time()) < 10
    assert verify(SECRET, body, headers) == EVENT.as_dict()
    assert headers["x-hopindex-event"] == "index.ready"
    assert headers["x-hopindex-event-id"] == "42"
    assert verify_signature(SECRET, body, headers["x-hopindex-signature"])


def test_a_500_answer_raises_with_status_and_redacted_url() -> None:
    """A receiver answering 500 makes the delivery a retryable error whose message
    names the status and the URL with its token redacted."""
    with WebhookReceiver(status=500) as receiver:
        target = webhook(receiver.url + "?token=abc")
        with pytest.raises(WebhookDeliveryError) as caught:
            deliver_once(target, EVENT, LOCAL)
    message = str(caught.value)
    assert caught.value.status == 500 and caught.value.retryable
    assert "HTTP 500" in message and f"{receiver.url}?token=***" in message
    assert "abc" not in message


def test_redirects_are_not_followed() -> None:
    """A 307 to another receiver is a failed attempt naming the status; the other
    receiver gets nothing (a redirect could point anywhere, a private address too)."""
    with WebhookReceiver() as elsewhere, \
            WebhookReceiver(status=307, location=elsewhere.url) as receiver:
        with pytest.raises(WebhookDeliveryError) as caught:
            deliver_once(webhook(receiver.url), EVENT, LOCAL)
        # deliver_once returns once its requests are answered, and a receiver records
        # each request before answering it: a followed redirect would be on record.
        assert elsewhere.received == []
    assert caught.value.status == 307 and len(receiver.received) == 1


def test_unreachable_slow_and_silent_receivers_raise_within_the_timeouts() -> None:
    """Nothing listening, a receiver slower than the read timeout and one that never
    answers all raise ``WebhookDeliveryError`` with no status, within the timeout."""
    short = replace(LOCAL, read_timeout_s=0.3)
    with pytest.raises(WebhookDeliveryError, match="request failed") as refused:
        deliver_once(webhook(f"http://127.0.0.1:{free_port()}/x"), EVENT, short)
    assert refused.value.status is None
    # Without the read timeout the slow receiver would take its 10 s and the silent one
    # forever; with it an attempt takes 0.3 s plus a local connection, and 5 s leaves
    # a loaded 2-core machine room to be slow while staying below the 10 s.
    for receiver in (WebhookReceiver(delay_s=10.0), WebhookReceiver(hold=True)):
        with receiver:
            started = time.monotonic()
            with pytest.raises(WebhookDeliveryError, match="no answer within") as slow:
                deliver_once(webhook(receiver.url), EVENT, short)
            assert time.monotonic() - started < 5.0
            receiver.hold = False
        assert slow.value.status is None


class OneAnswerResolver:
    """Answers the first lookup of each name with 127.0.0.1 and every later one with
    an address where nothing listens: a rebinding name. Counts the lookups."""

    def __init__(self) -> None:
        self.lookups = 0

    def resolve_host(self, host: str, port: int) -> list[IPAddress]:
        self.lookups += 1
        return [ipaddress.ip_address("127.0.0.1" if self.lookups == 1 else "127.0.0.2")]


def test_a_delivery_connects_to_the_address_it_checked() -> None:
    """The name is resolved once per attempt and the request goes to that address, with
    the registered name in the Host header (private targets allowed here, so the
    receiver on loopback can stand for the name's server)."""
    resolver = OneAnswerResolver()
    with WebhookReceiver() as receiver:
        hook = webhook(f"http://hooks.example.org:{receiver.port}/in?token=t")
        deliver_once(hook, EVENT, replace(LOCAL, resolver=resolver))
        [(body, headers)] = receiver.wait_for(lambda r: len(r) == 1, timeout_s=5)
    assert resolver.lookups == 1
    assert headers["host"] == f"hooks.example.org:{receiver.port}"
    assert verify(SECRET, body, headers) == EVENT.as_dict()


def test_delivery_refuses_a_name_that_resolves_to_loopback() -> None:
    """Without private targets allowed, ``localhost`` (through the system resolver) and a
    public-looking name that resolves to 127.0.0.1 are refused at delivery, for good
    (not retryable), and the receiver listening there gets nothing."""
    strict = replace(LOCAL, allow_private=False)
    with WebhookReceiver() as receiver:
        for url, options in ((f"http://localhost:{receiver.port}/in", strict),
                             (f"http://hooks.example.org:{receiver.port}/in",
                              replace(strict, resolver=OneAnswerResolver())),
                             (f"http://2130706433:{receiver.port}/in", strict)):
            with pytest.raises(WebhookTargetRefusedError, match="loopback") as caught:
                deliver_once(webhook(url), EVENT, options)
            assert not caught.value.retryable
        # deliver_once returns once any request it sent is answered, and the receiver
        # records a request before answering it: one sent would be on record.
        assert receiver.received == []


# -- emitting without a broker -----------------------------------------------------------
# An emitter that waited for a silent receiver would wait this long (one attempt's read
# timeout). Emitting itself is an SQLite append and a hand-off to the sender thread,
# milliseconds; EMIT_BOUND_S leaves a loaded 2-core machine ample room and stays half
# of the wait it would show.
READ_TIMEOUT_S = 10.0
EMIT_BOUND_S = READ_TIMEOUT_S / 2


def settle(what: str) -> None:
    """Return once this process's sender has no delivery pending (none queued, waiting
    for a retry or in flight): past every request it was going to make."""
    sender = embedded_sender(current_runtime().settings)
    wait_until(lambda: sender.pending() == 0, what=what)


@pytest.fixture
def eager_log(tmp_path: Path) -> Iterator[SqliteEventLog]:
    """An SQLite event log bound as this process's runtime, tasks running eagerly and
    webhooks delivered by the background sender (closed at the end)."""
    settings = Settings(data_dir=tmp_path, webhook_allow_private=True,
                        webhook_read_timeout_s=READ_TIMEOUT_S, webhook_breaker_failures=3,
                        webhook_breaker_cooldown_s=1.0).resolved()
    configure_app(settings)
    log = SqliteEventLog(tmp_path / "events.sqlite3")
    bind_runtime(Runtime(settings=settings, backends=Backends(settings, events=log)))
    yield log
    close_embedded_senders()
    bind_runtime(None)
    log.close()


def test_emit_event_delivers_to_each_webhook_of_the_index(eager_log: SqliteEventLog) -> None:
    """Emitting appends the event and delivers it, signed, to each webhook of its index
    and to no other index's webhook."""
    with WebhookReceiver() as mine, WebhookReceiver() as other:
        hook = register_webhook(eager_log, "curie", mine.url, None, allow_private=True)
        register_webhook(eager_log, "someone-else", other.url, None, allow_private=True)
        event = emit_event(current_runtime(), EventType.INDEX_READY, "curie", "job-1",
                           {"units": {}})
        [(body, headers)] = mine.wait_for(lambda r: len(r) == 1, timeout_s=5)
        # emit_event hands every delivery to the sender before it returns.
        settle("the sender to finish the event's deliveries")
        assert other.received == [] and len(mine.received) == 1
    assert eager_log.get_event(event.event_id) == event
    assert verify(hook.secret, body, headers)["id"] == event.event_id  # type: ignore[index]


def test_emitting_does_not_wait_for_a_silent_receiver(eager_log: SqliteEventLog) -> None:
    """A receiver that never answers costs the emitter nothing: emit returns at once
    while the delivery waits in the background, and the event is delivered once the
    receiver answers again."""
    with WebhookReceiver(hold=True) as receiver:
        hook = register_webhook(eager_log, "curie", receiver.url, None, allow_private=True)
        started = time.monotonic()
        event = emit_event(current_runtime(), EventType.JOB_STARTED, "curie", "job-1", {})
        assert time.monotonic() - started < EMIT_BOUND_S
        receiver.wait_held(1, timeout_s=5)
        receiver.hold = False
        [(body, headers)] = receiver.wait_for(lambda r: len(r) == 1, timeout_s=15)
        settle("the sender to finish the delivery")
        assert len(receiver.received) == 1
    assert verify(hook.secret, body, headers)["id"] == event.event_id  # type: ignore[index]


def test_a_failing_receiver_is_retried_until_it_answers(eager_log: SqliteEventLog) -> None:
    """A receiver answering 503 gets the delivery again after a backoff, without the
    emitter waiting, and the event arrives once it answers 200."""
    with WebhookReceiver(answers=[503, 503]) as receiver:
        register_webhook(eager_log, "curie", receiver.url, None, allow_private=True)
        started = time.monotonic()
        emit_event(current_runtime(), EventType.JOB_FAILED, "curie", "job-1", {"reason": "boom"})
        assert time.monotonic() - started < EMIT_BOUND_S
        # An emitter that waited for the delivery would return after its success, the
        # third request, which comes two backoffs (1 s, then 2 s) after the first.
        assert len(receiver.received) < 3
        deliveries = receiver.wait_for(lambda r: len(r) >= 3, timeout_s=15)
        settle("the sender to finish the delivery")
        # Two 503s, then the success, and nothing after it.
        assert len(receiver.received) == len(deliveries) == 3
    assert len({h["webhook-id"] for _, h in deliveries}) == 1


def test_a_removed_webhook_gets_nothing(eager_log: SqliteEventLog) -> None:
    """Emitting after a webhook is deleted delivers nothing to it."""
    with WebhookReceiver() as receiver:
        hook = register_webhook(eager_log, "curie", receiver.url, None, allow_private=True)
        assert eager_log.delete_webhook(hook.webhook_id)
        emit_event(current_runtime(), EventType.JOB_STARTED, "curie", "job-1", {})
        # emit_event hands any delivery to the sender before it returns.
        settle("the sender to finish any delivery of the event")
        assert receiver.received == []
