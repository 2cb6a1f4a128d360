"""Publishing an event: append it to the durable log, then queue its webhook deliveries.

The log comes first and is the record: a delivery that cannot be queued (broker
down) is logged and lost to that webhook, but the event itself stays readable by
``hopindex events --from``. The reverse order could deliver an event that the log
never kept.
"""

from __future__ import annotations

from typing import Any

from hopindex.core.errors import HopindexError
from hopindex.core.events import Event, EventType
from hopindex.core.logging import get_logger
from hopindex.scheduler.runtime import Runtime
from hopindex.scheduler.task_names import DELIVER_WEBHOOK

log = get_logger(__name__)


def emit_event(runtime: Runtime, event_type: EventType, index: str, job_id: str,
               data: dict[str, Any]) -> Event:
    """Append the event and queue one delivery per webhook of ``index``.

    Raises only if the append fails; the webhooks are best effort from here on.
    """
    events = runtime.backends.events
    event = events.append_event(event_type, index, job_id, data)
    try:
        webhooks = events.list_webhooks(index)
    except HopindexError as exc:
        log.error("webhooks_not_listed", event_id=event.event_id, index=index,
                  error=str(exc))
        return event
    for webhook in webhooks:
        try:
            runtime.signature(DELIVER_WEBHOOK, webhook.webhook_id,
                              event.event_id).apply_async(ignore_result=True)
        # Any error: the broker client raises kombu's, redis's and socket errors alike,
        # and none of them may fail the job whose event this is.
        except Exception as exc:
            log.error("webhook_not_queued", webhook_id=webhook.webhook_id,
                      event_id=event.event_id, event_type=event.event_type.value,
                      index=index, error=f"{type(exc).__name__}: {exc}")
    return event
