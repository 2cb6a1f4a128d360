"""The webhook delivery task (control queue): one event to one webhook, retried.

It takes ids, not the event, like every task here: a retry hours later reads the
webhook as it is then (removed: nothing to do) and the event as the log keeps it.
"""

from __future__ import annotations

import time
from typing import Any

from hopindex.core.events import Event, Webhook
from hopindex.core.logging import get_logger
from hopindex.scheduler.webhooks import WebhookDeliveryError, deliver_once, public_url
from hopindex.workers.app import app
from hopindex.workers.runtime import current_runtime

log = get_logger(__name__)

DELIVERY_TIMEOUT_S = 10.0
MAX_RETRIES = 8
MAX_COUNTDOWN_S = 300
# Eager mode has no queue to wait in: a few quick attempts, inside the caller's time.
EAGER_PAUSES_S = (0.2, 0.4)


@app.task(name="hopindex.deliver_webhook", bind=True, max_retries=MAX_RETRIES, job_bound=False)  # type: ignore[untyped-decorator]  # celery is untyped
def deliver_webhook(self: Any, webhook_id: str, event_id: str) -> None:
    """POST the event to the webhook; a failure is retried after 1, 2, 4 … s (at most
    ``MAX_RETRIES`` times), then logged as ``webhook_failed``. Never raises for the
    receiver's sake; an event log outage raises and is retried by the base task."""
    events = current_runtime().backends.events
    webhook = next((w for w in events.list_webhooks() if w.webhook_id == webhook_id), None)
    if webhook is None:
        log.info("webhook_skipped", webhook_id=webhook_id, event_id=event_id,
                 reason="webhook removed")
        return
    event = events.get_event(event_id)
    if event is None:
        log.warning("webhook_skipped", webhook_id=webhook_id, event_id=event_id,
                    reason="event no longer in the log")
        return
    if self.request.is_eager or app.conf.task_always_eager:
        # self.retry in eager mode re-runs the task at once, recursively, ignoring the
        # countdown; bounded quick attempts instead.
        _deliver_eagerly(webhook, event)
        return
    try:
        deliver_once(webhook, event, DELIVERY_TIMEOUT_S)
    except WebhookDeliveryError as exc:
        retries = int(self.request.retries)
        if retries >= MAX_RETRIES:
            _give_up(webhook, event, exc, attempts=retries + 1)
            return
        countdown = min(2**retries, MAX_COUNTDOWN_S)
        log.warning("webhook_retrying", webhook_id=webhook_id, event_id=event_id,
                    attempt=retries + 1, countdown_s=countdown, status=exc.status,
                    error=str(exc))
        raise self.retry(exc=exc, countdown=countdown, max_retries=MAX_RETRIES) from exc


def _deliver_eagerly(webhook: Webhook, event: Event) -> None:
    for attempt, pause_s in enumerate((*EAGER_PAUSES_S, None), start=1):
        try:
            deliver_once(webhook, event, DELIVERY_TIMEOUT_S)
        except WebhookDeliveryError as exc:
            if pause_s is None:
                _give_up(webhook, event, exc, attempts=attempt)
                return
            log.warning("webhook_retrying", webhook_id=webhook.webhook_id,
                        event_id=event.event_id, attempt=attempt, countdown_s=pause_s,
                        status=exc.status, error=str(exc))
            time.sleep(pause_s)
        else:
            return


def _give_up(webhook: Webhook, event: Event, exc: WebhookDeliveryError, *,
             attempts: int) -> None:
    # Logged, not raised: the event stays in the log, where a subscriber can still
    # read it, and a raised error would only make the base task retry once more.
    log.error("webhook_failed", webhook_id=webhook.webhook_id, event_id=event.event_id,
              event_type=event.event_type.value, index=event.index,
              url=public_url(webhook.url), attempts=attempts, status=exc.status,
              error=str(exc))
