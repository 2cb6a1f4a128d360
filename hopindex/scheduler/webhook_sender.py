"""Webhook deliveries in the background of a process with no broker.

Without a broker, events are emitted inside the writer's own call (an ingest, a
delete); delivering there would make every writer wait on every receiver. So the
emitter only hands the delivery to this sender and returns. The sender keeps one
lane per endpoint (``scheme://host:port``), sends one delivery at a time per lane
on a few threads, retries failures after a backoff without holding up the lane,
and pauses a lane while its circuit breaker is open: a dead or slow receiver
delays its own deliveries only. A lane holds at most ``max_pending`` deliveries;
one more is dropped, logged and counted.

``close`` delivers what is due within a deadline (a CLI run that ingests and exits
still sends its events) and drops the rest, logged and counted; the service closes
the process's senders when it closes (``close_embedded_senders``).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from hopindex.backends.protocols import EventLog
from hopindex.core.events import Event, Webhook
from hopindex.core.logging import get_logger
from hopindex.core.redact import redact_url
from hopindex.core.settings import Settings
from hopindex.scheduler.webhook_breaker import CircuitBreaker, MemoryBreaker
from hopindex.scheduler.webhook_delivery import (
    DeliveryOutcome,
    DeliveryPolicy,
    NextStep,
    attempt_delivery,
    backoff_s,
    count,
    current_webhook,
    endpoint_of,
)

log = get_logger(__name__)


@dataclass(slots=True)
class _Item:
    webhook: Webhook
    event: Event
    events: EventLog
    attempt: int = 1


@dataclass(slots=True)
class _Lane:
    items: deque[_Item] = field(default_factory=deque)
    busy: bool = False
    paused_until: float = 0.0
    # Items in the lane, waiting for a retry, or in flight: what max_pending bounds.
    pending: int = 0


class WebhookSender:
    def __init__(self, policy: DeliveryPolicy, breaker: CircuitBreaker, *, threads: int,
                 max_pending: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._policy = policy
        self._breaker = breaker
        self._threads_wanted = threads
        self._max_pending = max_pending
        self._clock = clock
        self._cond = threading.Condition()
        self._lanes: dict[str, _Lane] = {}
        self._ready: deque[str] = deque()
        self._queued: set[str] = set()
        # (due, sequence, endpoint, item): a retry waiting for its time, or (item None)
        # the end of a lane's pause.
        self._timers: list[tuple[float, int, str, _Item | None]] = []
        self._sequence = itertools.count()
        self._threads: list[threading.Thread] = []
        self._closing = False
        self._closed = False
        self._dropped_closing = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> WebhookSender:
        return cls(DeliveryPolicy.from_settings(settings),
                   MemoryBreaker(settings.webhook_breaker_failures,
                                 settings.webhook_breaker_cooldown_s),
                   threads=settings.webhook_sender_threads,
                   max_pending=settings.webhook_queue_size)

    # -- the emitter's side -----------------------------------------------------------
    def submit(self, webhook: Webhook, event: Event, events: EventLog) -> bool:
        """Queue a delivery and return at once; False (logged, counted) when the
        endpoint's lane is full or the sender is closed."""
        endpoint = endpoint_of(webhook)
        with self._cond:
            if self._closing:
                self._drop(_Item(webhook, event, events), "sender closed")
                return False
            lane = self._lanes.setdefault(endpoint, _Lane())
            if lane.pending >= self._max_pending:
                self._drop(_Item(webhook, event, events),
                           f"{self._max_pending} deliveries already wait for this endpoint")
                return False
            lane.items.append(_Item(webhook, event, events))
            lane.pending += 1
            self._start_threads()
            self._mark_ready(endpoint)
            self._cond.notify()
        return True

    def pending(self) -> int:
        """Deliveries not finished yet (queued, waiting to retry, or in flight)."""
        with self._cond:
            return sum(lane.pending for lane in self._lanes.values())

    def close(self, timeout_s: float) -> int:
        """Deliver what is due now within ``timeout_s``, then drop the rest (retries
        not yet due, lanes paused by their breaker); returns how many were dropped
        since closing began. A delivery still in flight at the deadline finishes on its
        (daemon) thread, and a retry it would need is dropped then."""
        deadline = self._clock() + timeout_s
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(max(0.0, deadline - self._clock()))
        with self._cond:
            self._closed = True
            for lane in self._lanes.values():
                for item in lane.items:
                    self._drop(item, "process closing")
                lane.pending -= len(lane.items)
                lane.items.clear()
            for _due, _seq, endpoint, waiting in self._timers:
                if waiting is not None:
                    self._drop(waiting, "process closing before its retry")
                    self._lanes[endpoint].pending -= 1
            self._timers.clear()
            self._ready.clear()
            self._queued.clear()
            self._cond.notify_all()
            return self._dropped_closing

    # -- the threads' side ------------------------------------------------------------
    def _start_threads(self) -> None:
        while len(self._threads) < self._threads_wanted:
            thread = threading.Thread(target=self._run, daemon=True,
                                      name=f"webhook-sender-{len(self._threads)}")
            self._threads.append(thread)
            thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                taken = self._take()
            if taken is None:
                return
            endpoint, item = taken
            step = self._step(item)
            with self._cond:
                self._finish(endpoint, item, step)

    def _take(self) -> tuple[str, _Item] | None:
        """The next delivery of a lane that is free, not paused and not empty; waits
        for one. None when the sender closes and nothing is ready."""
        while True:
            if self._closed:
                return None
            if not self._closing:
                self._fire_timers()
            if self._ready:
                endpoint = self._ready.popleft()
                self._queued.discard(endpoint)
                lane = self._lanes[endpoint]
                lane.busy = True
                return endpoint, lane.items.popleft()
            if self._closing:
                return None
            wait_s = self._timers[0][0] - self._clock() if self._timers else None
            self._cond.wait(wait_s)

    def _fire_timers(self) -> None:
        now = self._clock()
        while self._timers and self._timers[0][0] <= now:
            _due, _seq, endpoint, item = heapq.heappop(self._timers)
            if item is not None:
                # A waiting retry counts as pending, so its lane is still there.
                self._lanes[endpoint].items.append(item)
            self._mark_ready(endpoint)

    def _step(self, item: _Item) -> NextStep:
        try:
            webhook = current_webhook(item.events, item.webhook)
            if webhook is None:
                log.info("webhook_skipped", webhook_id=item.webhook.webhook_id,
                         event_id=item.event.event_id, reason="webhook removed")
                count(self._policy, DeliveryOutcome.SKIPPED)
                return NextStep(DeliveryOutcome.SKIPPED)
            return attempt_delivery(webhook, item.event, item.attempt, policy=self._policy,
                                    breaker=self._breaker)
        # A thread that died would leave its lane busy for good: any error here (the
        # event log unreachable, a bug) is a failed attempt, retried like the others.
        except Exception as exc:
            log.error("webhook_sender_error", webhook_id=item.webhook.webhook_id,
                      event_id=item.event.event_id, url=redact_url(item.webhook.url),
                      error=f"{type(exc).__name__}: {redact_url(str(exc))}")
            if item.attempt >= self._policy.max_attempts:
                count(self._policy, DeliveryOutcome.GAVE_UP)
                return NextStep(DeliveryOutcome.GAVE_UP)
            count(self._policy, DeliveryOutcome.FAILED)
            return NextStep(DeliveryOutcome.FAILED, item.attempt + 1, backoff_s(item.attempt))

    def _finish(self, endpoint: str, item: _Item, step: NextStep) -> None:
        lane = self._lanes[endpoint]
        lane.busy = False
        if step.again and (self._closing or self._closed):
            self._drop(item, "process closing before its retry")
            step = NextStep(DeliveryOutcome.DROPPED)
        if step.outcome is DeliveryOutcome.DEFERRED:
            # The breaker is the endpoint's: the whole lane waits, this item first.
            lane.items.appendleft(item)
            lane.paused_until = self._clock() + step.delay_s
            self._push_timer(lane.paused_until, endpoint, None)
        elif step.outcome is DeliveryOutcome.FAILED:
            # Only this item waits for its retry; the lane goes on with the next.
            item.attempt = step.attempt
            self._push_timer(self._clock() + step.delay_s, endpoint, item)
        else:
            lane.pending -= 1
        self._mark_ready(endpoint)
        if lane.pending == 0 and not lane.busy:
            del self._lanes[endpoint]
        self._cond.notify_all()

    def _push_timer(self, due: float, endpoint: str, item: _Item | None) -> None:
        heapq.heappush(self._timers, (due, next(self._sequence), endpoint, item))

    def _mark_ready(self, endpoint: str) -> None:
        lane = self._lanes.get(endpoint)
        if (lane is None or lane.busy or not lane.items or endpoint in self._queued
                or lane.paused_until > self._clock()):
            return
        self._ready.append(endpoint)
        self._queued.add(endpoint)

    def _drop(self, item: _Item, reason: str) -> None:
        if self._closing:
            self._dropped_closing += 1
        log.error("webhook_dropped", webhook_id=item.webhook.webhook_id,
                  event_id=item.event.event_id, event_type=item.event.event_type.value,
                  index=item.event.index, url=redact_url(item.webhook.url),
                  attempt=item.attempt, reason=reason)
        count(self._policy, DeliveryOutcome.DROPPED)


# -- the process's senders ------------------------------------------------------------
_senders: dict[Settings, WebhookSender] = {}
_senders_lock = threading.Lock()


def embedded_sender(settings: Settings) -> WebhookSender:
    """This process's sender for ``settings`` (made on first use: a process that never
    delivers starts no thread)."""
    with _senders_lock:
        sender = _senders.get(settings)
        if sender is None:
            sender = _senders[settings] = WebhookSender.from_settings(settings)
        return sender


def close_embedded_senders() -> int:
    """Close every sender of this process (each delivers what is due for up to one
    attempt's connect and read timeouts); returns how many deliveries were dropped."""
    with _senders_lock:
        senders = list(_senders.items())
        _senders.clear()
    return sum(sender.close(settings.webhook_connect_timeout_s
                            + settings.webhook_read_timeout_s)
               for settings, sender in senders)
