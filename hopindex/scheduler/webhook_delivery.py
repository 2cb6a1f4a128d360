"""One step of a delivery's life, shared by the webhook task (broker) and the embedded
sender (no broker): check the endpoint's breaker, make one attempt, and say what
comes next — done, retry after a backoff, wait out the breaker, or give up.

Every outcome is logged with the webhook, the event and the redacted URL, and
counted in ``hopindex_webhook_deliveries_total{outcome}``; nothing is dropped
without both.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from hopindex.backends.protocols import EventLog
from hopindex.core.events import Event, Webhook
from hopindex.core.logging import get_logger
from hopindex.core.redact import redact_url
from hopindex.core.settings import MetricsMode, Settings
from hopindex.scheduler.webhook_breaker import CircuitBreaker
from hopindex.scheduler.webhook_targets import (
    Resolver,
    WebhookTargetRefusedError,
    parse_target,
)
from hopindex.scheduler.webhooks import DeliveryOptions, WebhookDeliveryError, deliver_once

log = get_logger(__name__)

BACKOFF_BASE_S = 1.0
BACKOFF_MAX_S = 300.0


class DeliveryOutcome(enum.StrEnum):
    """What became of one step: the ``outcome`` label of the delivery counter."""

    DELIVERED = "delivered"
    FAILED = "failed"  # this attempt failed; another is due after a backoff
    DEFERRED = "deferred"  # the endpoint's breaker is open: no attempt, try later
    GAVE_UP = "gave_up"  # the last attempt failed
    REFUSED = "refused"  # the address is not one webhooks may reach: never retried
    DROPPED = "dropped"  # the sender's queue was full, or the process closed first
    SKIPPED = "skipped"  # the webhook was removed (or the event aged out of the log)


@dataclass(frozen=True, slots=True)
class NextStep:
    outcome: DeliveryOutcome
    # The attempt number the next try carries, and when it is due.
    attempt: int = 0
    delay_s: float = 0.0

    @property
    def again(self) -> bool:
        return self.outcome in (DeliveryOutcome.FAILED, DeliveryOutcome.DEFERRED)


@dataclass(frozen=True, slots=True)
class DeliveryPolicy:
    options: DeliveryOptions
    max_attempts: int = 8
    metrics: bool = True

    @classmethod
    def from_settings(cls, settings: Settings, resolver: Resolver | None = None
                      ) -> DeliveryPolicy:
        return cls(options=DeliveryOptions.from_settings(settings, resolver),
                   max_attempts=settings.webhook_max_attempts,
                   metrics=settings.metrics is MetricsMode.ON)


def backoff_s(attempt: int) -> float:
    """The pause after failed attempt ``attempt``: 1, 2, 4 … s, at most 5 minutes."""
    return float(min(BACKOFF_BASE_S * 2 ** (attempt - 1), BACKOFF_MAX_S))


def endpoint_of(webhook: Webhook) -> str:
    """What breakers and slots key on: ``scheme://host:port`` (the URL itself when it
    does not parse, which its delivery then refuses)."""
    try:
        return parse_target(webhook.url).endpoint
    except ValueError:
        return redact_url(webhook.url)


def count(policy: DeliveryPolicy, outcome: DeliveryOutcome) -> None:
    if policy.metrics:
        # Imported here: a worker sets up multiprocess metrics before the first import.
        from hopindex.monitoring import metrics as m

        m.WEBHOOK_DELIVERIES.labels(outcome=outcome.value).inc()


def current_webhook(events: EventLog, webhook: Webhook) -> Webhook | None:
    """The webhook as registered now (its URL or secret may have changed), or None when
    it was removed: a delivery is made to what is registered when it is made."""
    return next((w for w in events.list_webhooks(webhook.index)
                 if w.webhook_id == webhook.webhook_id), None)


def attempt_delivery(webhook: Webhook, event: Event, attempt: int, *,
                     policy: DeliveryPolicy, breaker: CircuitBreaker,
                     send: Callable[[Webhook, Event, DeliveryOptions], int] = deliver_once
                     ) -> NextStep:
    """Attempt number ``attempt`` of delivering ``event`` to ``webhook``, unless the
    endpoint's breaker is open. Raises only what the breaker raises (its Redis down)."""
    endpoint = endpoint_of(webhook)
    context = {"webhook_id": webhook.webhook_id, "event_id": event.event_id,
               "event_type": event.event_type.value, "index": event.index,
               "url": redact_url(webhook.url)}
    blocked_s = breaker.blocked_for_s(endpoint)
    if blocked_s > 0:
        log.info("webhook_deferred", **context, attempt=attempt, wait_s=round(blocked_s, 3),
                 reason="endpoint circuit open")
        count(policy, DeliveryOutcome.DEFERRED)
        return NextStep(DeliveryOutcome.DEFERRED, attempt, blocked_s)
    try:
        send(webhook, event, policy.options)
    except WebhookTargetRefusedError as exc:
        log.error("webhook_refused", **context, attempt=attempt, error=str(exc))
        count(policy, DeliveryOutcome.REFUSED)
        return NextStep(DeliveryOutcome.REFUSED)
    except WebhookDeliveryError as exc:
        opened = breaker.record_failure(endpoint)
        if attempt >= policy.max_attempts:
            # Logged, not raised: the event stays in the log, where a subscriber can
            # still read it (``hopindex events --from``).
            log.error("webhook_failed", **context, attempts=attempt, status=exc.status,
                      error=str(exc))
            count(policy, DeliveryOutcome.GAVE_UP)
            return NextStep(DeliveryOutcome.GAVE_UP)
        pause_s = backoff_s(attempt)
        log.warning("webhook_retrying", **context, attempt=attempt, countdown_s=pause_s,
                    status=exc.status, circuit_opened=opened, error=str(exc))
        count(policy, DeliveryOutcome.FAILED)
        return NextStep(DeliveryOutcome.FAILED, attempt + 1, pause_s)
    breaker.record_success(endpoint)
    count(policy, DeliveryOutcome.DELIVERED)
    return NextStep(DeliveryOutcome.DELIVERED)
