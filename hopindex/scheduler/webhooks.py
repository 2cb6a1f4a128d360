"""Signed webhook deliveries (DESIGN.md §7): one POST of one event.

The body is the event's public JSON with sorted keys, and ``X-Hopindex-Signature``
is ``sha256=<hex HMAC-SHA256 of the body under the webhook's secret>``, the
convention GitHub's webhooks use, so receivers can reuse their verifiers. Retrying
is the Celery task's business (``workers/tasks/webhooks.py``); this module makes
one attempt and says why it failed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from urllib.parse import urlsplit, urlunsplit

import httpx

from hopindex.core.errors import RetryableStageError
from hopindex.core.events import Event, Webhook
from hopindex.core.logging import get_logger

log = get_logger(__name__)

SIGNATURE_HEADER = "X-Hopindex-Signature"
EVENT_HEADER = "X-Hopindex-Event"
EVENT_ID_HEADER = "X-Hopindex-Event-Id"
SIGNATURE_PREFIX = "sha256="
USER_AGENT = "hopindex-webhooks/1"
# A receiver's error page is cut to this many characters in the error message.
MAX_ERROR_BODY = 200


class WebhookDeliveryError(RetryableStageError):
    """The receiver could not be reached, timed out or answered other than 2xx.

    ``status`` is the HTTP status, None when no answer came. Retryable: receivers
    restart and deploy, and the event stays in the log to be sent again.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


def sign_body(secret: str, body: bytes) -> str:
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return SIGNATURE_PREFIX + digest


def verify_signature(secret: str, body: bytes, header: str | None) -> bool:
    """True when ``header`` is ``body``'s signature under ``secret``.

    Compared in constant time, so a forger cannot learn the signature byte by byte
    from how long a refusal takes.
    """
    if not header:
        return False
    return hmac.compare_digest(sign_body(secret, body).encode("ascii"),
                               header.strip().encode("utf-8"))


def event_body(event: Event) -> bytes:
    """Compact JSON with sorted keys: the exact bytes that are signed and sent."""
    return json.dumps(event.as_dict(), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")


def public_url(url: str) -> str:
    """``url`` without credentials or query, which may hold tokens: for messages and logs."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
    except ValueError:
        return "<malformed url>"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def deliver_once(webhook: Webhook, event: Event, timeout_s: float) -> None:
    """POST ``event`` to ``webhook.url``, signed; raises ``WebhookDeliveryError``."""
    body = event_body(event)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        SIGNATURE_HEADER: sign_body(webhook.secret, body),
        EVENT_HEADER: event.event_type.value,
        EVENT_ID_HEADER: event.event_id,
    }
    where = public_url(webhook.url)
    try:
        # Redirects are not followed: a signed body should go where it was registered.
        response = httpx.post(webhook.url, content=body, headers=headers, timeout=timeout_s,
                              follow_redirects=False)
    except httpx.TimeoutException as exc:
        raise WebhookDeliveryError(f"webhook {webhook.webhook_id} at {where}: no answer "
                                   f"within {timeout_s:g} s ({type(exc).__name__})") from exc
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise WebhookDeliveryError(f"webhook {webhook.webhook_id} at {where}: request "
                                   f"failed: {type(exc).__name__}: {exc}") from exc
    if not response.is_success:
        excerpt = response.text[:MAX_ERROR_BODY].strip()
        raise WebhookDeliveryError(
            f"webhook {webhook.webhook_id} at {where} answered HTTP {response.status_code}"
            + (f": {excerpt}" if excerpt else ""), status=response.status_code)
    log.info("webhook_delivered", webhook_id=webhook.webhook_id, event_id=event.event_id,
             event_type=event.event_type.value, url=where, status=response.status_code)
