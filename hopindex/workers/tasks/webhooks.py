"""The webhook delivery task (webhooks queue): one event to one webhook.

It takes ids, not the event, like every task here: a retry hours later reads the
webhook as it is then (removed: nothing to do) and the event as the log keeps it.

With a broker the task runs on the workers of its own queue, so a slow receiver
never holds up job planning on ``control``. Each run makes at most one attempt,
holding the endpoint's one slot (``RedisSlots``) and heeding its shared circuit
breaker; what comes next (a retry after a backoff, a wait for the breaker, a
wait for the slot) is a new message with a countdown, never a worker sleeping.

Without a broker (eager mode) the task only hands the delivery to this process's
background sender (``scheduler/webhook_sender.py``) and returns, so the writer that
emitted the event does not wait on the receiver.
"""

from __future__ import annotations

import random
from typing import Any

import redis

from hopindex.core.events import Event, Webhook
from hopindex.core.logging import get_logger
from hopindex.core.settings import Settings
from hopindex.scheduler.webhook_breaker import MemoryBreaker, RedisBreaker, RedisSlots
from hopindex.scheduler.webhook_delivery import (
    DeliveryOutcome,
    DeliveryPolicy,
    NextStep,
    attempt_delivery,
    endpoint_of,
)
from hopindex.scheduler.webhook_sender import embedded_sender
from hopindex.workers.app import app
from hopindex.workers.runtime import Runtime, current_runtime

log = get_logger(__name__)

TASK_NAME = "hopindex.deliver_webhook"
# A delivery that finds its endpoint's slot taken looks again this soon (plus jitter,
# so the waiting ones do not all come back in the same instant).
SLOT_WAIT_S = 1.0
# The slot outlives one attempt's timeouts by this much before Redis frees it.
SLOT_MARGIN_S = 5.0
MAX_COUNTDOWN_SHARE = 0.5

_redis: dict[str, redis.Redis] = {}
_local_breakers: dict[Settings, MemoryBreaker] = {}


@app.task(name=TASK_NAME, bind=True, job_bound=False)  # type: ignore[untyped-decorator]  # celery is untyped
def deliver_webhook(self: Any, webhook_id: str, event_id: str, attempt: int = 1) -> str:
    """Attempt ``attempt`` of delivering the event to the webhook, or (eager mode)
    queue it on the background sender. Returns the outcome's name. Never raises for
    the receiver's sake; an event log or Redis outage raises and is retried by the
    base task."""
    runtime = current_runtime()
    events = runtime.backends.events
    webhook = next((w for w in events.list_webhooks() if w.webhook_id == webhook_id), None)
    event = events.get_event(event_id)
    if webhook is None or event is None:
        reason = "webhook removed" if webhook is None else "event no longer in the log"
        log.info("webhook_skipped", webhook_id=webhook_id, event_id=event_id, reason=reason)
        return DeliveryOutcome.SKIPPED.value
    if self.request.is_eager or app.conf.task_always_eager:
        queued = embedded_sender(runtime.settings).submit(webhook, event, events)
        return "queued" if queued else DeliveryOutcome.DROPPED.value
    step = _attempt_with_slot(runtime, webhook, event, attempt)
    if step.again:
        # A countdown message is held unacknowledged by a worker until it is due, and
        # the broker hands out again what stays unacknowledged past the visibility
        # timeout: a longer wait is taken in several hops (a deferred run defers again).
        longest_s = runtime.settings.visibility_timeout_s * MAX_COUNTDOWN_SHARE
        # The jitter spreads deliveries that a breaker released at the same instant.
        countdown_s = min(step.delay_s, longest_s) + random.uniform(0, 1)
        deliver_webhook.apply_async((webhook_id, event_id), {"attempt": step.attempt},
                                    countdown=countdown_s, ignore_result=True)
    return step.outcome.value


def _attempt_with_slot(runtime: Runtime, webhook: Webhook, event: Event, attempt: int
                       ) -> NextStep:
    settings = runtime.settings
    policy = DeliveryPolicy.from_settings(settings)
    url = settings.shared_redis_url("")
    if not url:
        # A broker that is not Redis (memory://, one process): this process's breaker.
        local = _local_breakers.get(settings)
        if local is None:
            local = _local_breakers[settings] = MemoryBreaker(
                settings.webhook_breaker_failures, settings.webhook_breaker_cooldown_s)
        return attempt_delivery(webhook, event, attempt, policy=policy, breaker=local)
    client = _client(url)
    endpoint = endpoint_of(webhook)
    slots = RedisSlots(client)
    hold_s = settings.webhook_connect_timeout_s + settings.webhook_read_timeout_s \
        + SLOT_MARGIN_S
    token = slots.acquire_slot(endpoint, hold_s)
    if token is None:
        # Another worker is sending to this endpoint: one at a time per endpoint.
        return NextStep(DeliveryOutcome.DEFERRED, attempt, SLOT_WAIT_S)
    try:
        breaker = RedisBreaker(client, settings.webhook_breaker_failures,
                               settings.webhook_breaker_cooldown_s)
        return attempt_delivery(webhook, event, attempt, policy=policy, breaker=breaker)
    finally:
        slots.release_slot(endpoint, token)


def _client(url: str) -> redis.Redis:
    """The broker's Redis, one client per process."""
    client = _redis.get(url)
    if client is None:
        client = _redis[url] = redis.Redis.from_url(url, socket_timeout=5.0,
                                                    socket_connect_timeout=5.0)
    return client

