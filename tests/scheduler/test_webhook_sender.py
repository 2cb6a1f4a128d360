"""The background sender of a process with no broker, against real receivers: one
attempt at a time per endpoint, a dead endpoint delays only itself, the circuit
breaker defers and then retries, the queue is bounded, closing drains what is due."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import structlog
from prometheus_client import REGISTRY

from hopindex.api.events import register_webhook
from hopindex.backends.events.sqlite_log import SqliteEventLog
from hopindex.core.events import Event, EventType, Webhook
from hopindex.scheduler.webhook_breaker import MemoryBreaker
from hopindex.scheduler.webhook_delivery import DeliveryPolicy
from hopindex.scheduler.webhook_sender import WebhookSender
from hopindex.scheduler.webhooks import DeliveryOptions
from tests.clocks import ManualClock
from tests.scheduler.webhook_receiver import WebhookReceiver
from tests.waiting import wait_until

INDEX = "curie"


@pytest.fixture
def log(tmp_path: Path) -> Iterator[SqliteEventLog]:
    log = SqliteEventLog(tmp_path / "events.sqlite3")
    yield log
    log.close()


def sender(*, read_timeout_s: float = 1.0, failures: int = 3, cooldown_s: float = 1.0,
           threads: int = 4, max_pending: int = 100, max_attempts: int = 8,
           clock: Callable[[], float] = time.monotonic) -> WebhookSender:
    """A sender whose breaker and timers both read ``clock``."""
    options = DeliveryOptions(connect_timeout_s=1.0, read_timeout_s=read_timeout_s,
                              allow_private=True)
    return WebhookSender(DeliveryPolicy(options, max_attempts=max_attempts),
                         MemoryBreaker(failures, cooldown_s, clock=clock), threads=threads,
                         max_pending=max_pending, clock=clock)


class RunningClock(ManualClock):
    """A manual clock that can also be run on while a test waits."""

    def running(self, condition: Callable[[], bool], step_s: float = 0.5
                ) -> Callable[[], bool]:
        """``condition``, for ``wait_until``, with the clock moved on ``step_s`` at each
        look: whenever the sender reads the clock to set a timer (a retry, the end of a
        cool-down), later looks bring that timer due."""

        def check() -> bool:
            self.advance(step_s)
            return condition()

        return check


def settle(s: WebhookSender, what: str) -> None:
    """Return once ``s`` has no delivery pending (none queued, waiting for a retry or in
    flight): past every request it was going to make."""
    wait_until(lambda: s.pending() == 0, what=what)


def hook(log: SqliteEventLog, receiver: WebhookReceiver) -> Webhook:
    return register_webhook(log, INDEX, receiver.url, None, allow_private=True)


def events(log: SqliteEventLog, n: int) -> list[Event]:
    return [log.append_event(EventType.JOB_PROGRESS, INDEX, "job-1", {"i": i})
            for i in range(n)]


def ids(deliveries: list[tuple[bytes, dict[str, str]]]) -> list[str]:
    return [headers["x-hopindex-event-id"] for _, headers in deliveries]


def counted(outcome: str) -> float:
    return REGISTRY.get_sample_value("hopindex_webhook_deliveries_total",
                                     {"outcome": outcome}) or 0.0


def test_one_attempt_at_a_time_per_endpoint(log: SqliteEventLog) -> None:
    """Five deliveries to a slow receiver, with four threads free: never two requests
    in flight at once, and all five arrive, in order, once each."""
    s = sender()
    with WebhookReceiver(delay_s=0.2) as receiver:
        target = hook(log, receiver)
        sent = events(log, 5)
        for event in sent:
            assert s.submit(target, event, log)
        got = receiver.wait_for(lambda r: len(r) == 5, timeout_s=10)
        s.close(timeout_s=2)
    assert receiver.most_at_once == 1
    assert ids(got) == [e.event_id for e in sent]


def test_a_silent_endpoint_delays_only_its_own_deliveries(log: SqliteEventLog) -> None:
    """While one receiver holds every request unanswered, another endpoint's deliveries
    arrive at once, not after the first one's timeouts; the held ones arrive later."""
    # Queued behind the silent endpoint, the other's deliveries would wait at least one
    # read timeout, 10 s; three local deliveries take milliseconds, and 5 s leaves a
    # loaded 2-core machine room while staying half of that wait.
    s = sender(read_timeout_s=10.0)
    with WebhookReceiver(hold=True) as dead, WebhookReceiver() as alive:
        dead_hook, alive_hook = hook(log, dead), hook(log, alive)
        sent = events(log, 3)
        for event in sent:
            s.submit(dead_hook, event, log)
        dead.wait_held(1, timeout_s=5)
        started = time.monotonic()
        for event in sent:
            s.submit(alive_hook, event, log)
        alive.wait_for(lambda r: len(r) == 3, timeout_s=10)
        assert time.monotonic() - started < 5.0
        dead.hold = False
        got = dead.wait_for(lambda r: len(r) == 3, timeout_s=20)
        s.close(timeout_s=2)
    assert sorted(ids(got)) == sorted(e.event_id for e in sent)


def test_the_breaker_defers_then_retries_after_the_cool_down(log: SqliteEventLog) -> None:
    """Two failed attempts open the endpoint's breaker: during the cool-down no request
    reaches it and its deliveries are deferred, not spent; after the receiver recovers,
    every delivery arrives exactly once."""
    # The clock stands still until the test moves it: the breaker's cool-down and the
    # retries' backoffs last until then, so "inside the cool-down" is a fact.
    clock = RunningClock()
    # One thread: deliveries are taken strictly in the order they became ready, which
    # is what makes the probes below a proof rather than a race.
    s = sender(failures=2, cooldown_s=2.0, clock=clock, threads=1)
    deferred_before = counted("deferred")
    with WebhookReceiver(status=503) as receiver, WebhookReceiver() as bystander:
        target = hook(log, receiver)
        sent = events(log, 4)
        for event in sent:
            s.submit(target, event, log)
        receiver.wait_for(lambda r: len(r) == 2, timeout_s=5)
        # The lane sends one at a time: the third delivery comes after the second
        # failure opened the breaker, and is deferred instead of sent. With the clock
        # stopped, nothing else is due: the lane is paused, the retries wait.
        wait_until(lambda: counted("deferred") > deferred_before,
                   what="the third delivery to be deferred by the open breaker")
        assert len(receiver.received) == 2
        assert s.pending() == 4  # deferred and waiting, none spent
        # Past the two retries' backoff (1 s), still inside the cool-down (2 s): the
        # retries fall due and must wait for the breaker too. Every time the thread
        # takes a delivery it first moves the due retries into their lane; the first
        # probe to another endpoint is taken after that, and a retry that wrongly went
        # ready then would be taken before the second probe (one thread, in order).
        clock.advance(1.5)
        bystander_hook = hook(log, bystander)
        for n, probe in enumerate(events(log, 2), start=1):
            s.submit(bystander_hook, probe, log)
            bystander.wait_for(lambda r, n=n: len(r) == n, timeout_s=10)
        assert len(receiver.received) == 2, "a retry reached the endpoint in its cool-down"
        wait_until(lambda: s.pending() == 4, what="the probes to finish, the four waiting")
        receiver.status = 200
        # Time runs on: the cool-down (2 s) and the retries' backoffs (1 s) end.
        wait_until(clock.running(lambda: len(set(ids(receiver.received[2:]))) == 4),
                   what="every delivery to arrive after the cool-down")
        wait_until(clock.running(lambda: s.pending() == 0),
                   what="the sender to finish every delivery")
        got = receiver.received
        assert len(got) == 6  # two failures, the four deliveries, and nothing after
        s.close(timeout_s=2)
    delivered = ids(got[2:])
    assert sorted(delivered) == sorted(e.event_id for e in sent)
    assert len(delivered) == len(set(delivered))


def test_a_delivery_gives_up_after_its_attempts(log: SqliteEventLog) -> None:
    """A receiver that always fails gets ``max_attempts`` requests for the event, then
    none; the outcome is logged and counted as given up."""
    gave_up_before = counted("gave_up")
    s = sender(max_attempts=2, failures=10)
    with WebhookReceiver(status=500) as receiver:
        s.submit(hook(log, receiver), events(log, 1)[0], log)
        receiver.wait_for(lambda r: len(r) == 2, timeout_s=10)
        settle(s, "the sender to give up")
        assert len(receiver.received) == 2
        s.close(timeout_s=1)
    assert counted("gave_up") == gave_up_before + 1


def test_a_full_lane_drops_and_counts(log: SqliteEventLog) -> None:
    """An endpoint's lane holds at most ``max_pending`` deliveries; one more is refused,
    logged and counted as dropped, and another endpoint is not affected."""
    dropped_before = counted("dropped")
    s = sender(max_pending=2, read_timeout_s=2.0)
    with WebhookReceiver(hold=True) as dead, WebhookReceiver() as alive:
        dead_hook = hook(log, dead)
        sent = events(log, 3)
        assert s.submit(dead_hook, sent[0], log) and s.submit(dead_hook, sent[1], log)
        assert not s.submit(dead_hook, sent[2], log)
        assert counted("dropped") == dropped_before + 1
        assert s.submit(hook(log, alive), sent[2], log)
        alive.wait_for(lambda r: len(r) == 1, timeout_s=5)
        dead.hold = False
        s.close(timeout_s=3)


def test_close_delivers_what_is_due_and_drops_what_waits(log: SqliteEventLog) -> None:
    """Closing sends the deliveries that are due (a CLI run's events still go out) and
    drops, with a count, those waiting for a retry; later submissions are refused."""
    s = sender()
    with WebhookReceiver() as alive, WebhookReceiver(status=500) as failing:
        alive_hook, failing_hook = hook(log, alive), hook(log, failing)
        sent = events(log, 3)
        s.submit(failing_hook, sent[0], log)
        failing.wait_for(lambda r: len(r) == 1, timeout_s=5)  # now waiting for a retry
        for event in sent:
            s.submit(alive_hook, event, log)
        dropped = s.close(timeout_s=5)
        assert len(alive.received) == 3
        assert dropped == 1 and len(failing.received) == 1
        assert not s.submit(alive_hook, sent[0], log)


def test_a_webhook_removed_while_waiting_is_skipped(log: SqliteEventLog) -> None:
    """A delivery waiting for its retry finds its webhook removed and is not sent."""
    # The retry is due only once the test moves the clock, after the webhook is
    # removed; a retry sent anyway would be answered 200 and counted here.
    clock = RunningClock()
    s = sender(clock=clock)
    with WebhookReceiver(answers=[500]) as receiver:
        target = hook(log, receiver)
        s.submit(target, events(log, 1)[0], log)
        receiver.wait_for(lambda r: len(r) == 1, timeout_s=5)
        log.delete_webhook(target.webhook_id)
        wait_until(clock.running(lambda: s.pending() == 0),
                   what="the sender to skip the retry")
        assert len(receiver.received) == 1
        s.close(timeout_s=1)


def test_delivery_logs_never_show_url_credentials(log: SqliteEventLog) -> None:
    """Every log line of a delivery's life (retrying, delivered, given up, dropped)
    names the URL redacted: userinfo and token never reach the log."""
    planted = ("Pl4ntedUser", "Pl4ntedPass", "Pl4ntedToken")
    # capture_logs keeps the configured level filter: a service opened by an earlier
    # test filters out info lines such as webhook_delivered.
    structlog.reset_defaults()
    s = sender(max_attempts=2, max_pending=1)
    with WebhookReceiver(status=500) as receiver, structlog.testing.capture_logs() as entries:
        url = receiver.url.replace("http://", f"http://{planted[0]}:{planted[1]}@")
        target = register_webhook(log, INDEX, f"{url}?token={planted[2]}", None,
                                  allow_private=True)
        first, second = events(log, 2)
        s.submit(target, first, log)
        assert not s.submit(target, second, log)  # dropped: the lane holds one
        receiver.wait_for(lambda r: len(r) == 2, timeout_s=10)
        settle(s, "the second failure to be handled: given up")
        receiver.status = 200
        assert s.submit(target, second, log)
        receiver.wait_for(lambda r: len(r) == 3, timeout_s=10)
        s.close(timeout_s=2)
    names = {e["event"] for e in entries}
    assert {"webhook_retrying", "webhook_failed", "webhook_dropped",
            "webhook_delivered"} <= names
    assert not [p for p in planted if p in repr(entries)]
    assert any("token=***" in str(e.get("url")) for e in entries)
