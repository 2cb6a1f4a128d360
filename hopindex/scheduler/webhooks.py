"""Signed webhook deliveries: one POST of one event, per the Standard Webhooks spec.

The body is the event's public JSON with sorted keys. Three headers sign it
(https://www.standardwebhooks.com): ``webhook-id`` (the same on every retry of one
event to one webhook, for the receiver to drop duplicates), ``webhook-timestamp``
(Unix seconds of this attempt) and ``webhook-signature``: ``v1,`` and the base64
HMAC-SHA256 of ``{id}.{timestamp}.{body}`` under the webhook's secret. Receivers
verify with any Standard Webhooks library and refuse timestamps more than five
minutes away from their clock, so a captured delivery cannot be replayed later.

Secrets are ``whsec_`` and the base64 of the key bytes, the spec's form. A secret
stored before that form (any other text) is its UTF-8 bytes as the key, so
``whsec_`` + base64(old secret) verifies the new header. The older
``X-Hopindex-Signature: sha256=<hex HMAC of the body>`` is still sent, under the
same key, for one release.

This module makes one attempt and says why it failed; retrying, circuit breaking
and queueing are ``webhook_delivery``'s, ``webhook_sender``'s and the task's.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass, field
from urllib.parse import unquote

import httpx

from hopindex.core.errors import RetryableStageError
from hopindex.core.events import Event, Webhook
from hopindex.core.logging import get_logger
from hopindex.core.redact import redact_url
from hopindex.core.settings import Settings
from hopindex.scheduler.webhook_targets import (
    Resolver,
    SystemResolver,
    WebhookTargetRefusedError,
    parse_target,
    pin_target,
    resolve_target,
)

log = get_logger(__name__)

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
STANDARD_SIGNATURE_HEADER = "webhook-signature"
# Deprecated: the body-only signature, kept one release for receivers that check it.
SIGNATURE_HEADER = "X-Hopindex-Signature"
EVENT_HEADER = "X-Hopindex-Event"
EVENT_ID_HEADER = "X-Hopindex-Event-Id"
SIGNATURE_PREFIX = "sha256="
SECRET_PREFIX = "whsec_"
SIGNATURE_VERSION = "v1"
# The spec's bounds on a secret's key bytes; a random one uses the upper bound's half.
MIN_SECRET_BYTES = 24
MAX_SECRET_BYTES = 64
RANDOM_SECRET_BYTES = 32
# What receivers are told to allow between a timestamp and their clock.
TIMESTAMP_TOLERANCE_S = 300
USER_AGENT = "hopindex-webhooks/2"
# A receiver's error page is cut to this many bytes: read no more, show no more.
MAX_ERROR_BODY = 200


class WebhookDeliveryError(RetryableStageError):
    """The receiver could not be reached, timed out or answered other than 2xx.

    ``status`` is the HTTP status, None when no answer came. Retryable: receivers
    restart and deploy, and the event stays in the log to be sent again.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


# -- secrets -------------------------------------------------------------------------
def new_secret() -> str:
    """A random secret in the spec's form."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(RANDOM_SECRET_BYTES)).decode()


def _decode_standard(secret: str) -> bytes:
    """The key bytes of a ``whsec_`` secret; ValueError when it is not valid base64."""
    try:
        return base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("a secret starting with whsec_ must continue with base64") from None


def signing_key(secret: str) -> bytes:
    """The HMAC key of a stored secret: a ``whsec_`` secret's decoded bytes, any other
    text's UTF-8 bytes (secrets stored before the ``whsec_`` form)."""
    if secret.startswith(SECRET_PREFIX):
        try:
            return _decode_standard(secret)
        except ValueError:
            pass  # an old free-text secret that happens to start with the prefix
    return secret.encode("utf-8")


def standard_secret(secret: str) -> str:
    """``secret`` in the ``whsec_`` form that Standard Webhooks libraries take."""
    return SECRET_PREFIX + base64.b64encode(signing_key(secret)).decode("ascii")


def normalize_secret(secret: str) -> str:
    """A secret given at registration, in ``whsec_`` form: a ``whsec_`` secret must be
    base64 of 24 to 64 bytes; other text is taken as its UTF-8 bytes, as before the
    ``whsec_`` form, so a receiver's existing secret keeps working. ValueError when
    it is neither."""
    if not secret.strip():
        raise ValueError("the secret must not be empty (omit it for a random one)")
    if not secret.startswith(SECRET_PREFIX):
        return standard_secret(secret)
    key = _decode_standard(secret)
    if not MIN_SECRET_BYTES <= len(key) <= MAX_SECRET_BYTES:
        raise ValueError(f"a whsec_ secret must hold {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} "
                         f"bytes, this one holds {len(key)}")
    return secret


# -- signatures ----------------------------------------------------------------------
def message_id(webhook: Webhook, event: Event) -> str:
    """``webhook-id``: one per event and webhook, the same on every retry. The webhook's
    random id keeps two servers' event numbers apart at one receiver."""
    return f"{webhook.webhook_id}_{event.event_id}"


def sign_message(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """``webhook-signature``'s value: ``v1,`` + base64 HMAC-SHA256 of ``id.timestamp.body``."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(signing_key(secret), signed, hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode('ascii')}"


def sign_body(secret: str, body: bytes) -> str:
    """The deprecated ``X-Hopindex-Signature``: ``sha256=`` + hex HMAC of the body alone."""
    digest = hmac.new(signing_key(secret), body, hashlib.sha256).hexdigest()
    return SIGNATURE_PREFIX + digest


def verify_signature(secret: str, body: bytes, header: str | None) -> bool:
    """True when ``header`` is ``body``'s deprecated signature under ``secret``.

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


def signed_headers(webhook: Webhook, event: Event, body: bytes, timestamp: int
                   ) -> dict[str, str]:
    msg_id = message_id(webhook, event)
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        ID_HEADER: msg_id,
        TIMESTAMP_HEADER: str(timestamp),
        STANDARD_SIGNATURE_HEADER: sign_message(webhook.secret, msg_id, timestamp, body),
        SIGNATURE_HEADER: sign_body(webhook.secret, body),
        EVENT_HEADER: event.event_type.value,
        EVENT_ID_HEADER: event.event_id,
    }


# -- one attempt ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DeliveryOptions:
    """How one attempt is made: its timeouts, and which addresses it may reach.

    ``allow_private`` is this process's setting, which decides only for webhooks stored
    before the registering process's decision was recorded (``private_allowed``)."""

    connect_timeout_s: float = 3.0
    read_timeout_s: float = 5.0
    allow_private: bool = False
    resolver: Resolver = field(default_factory=SystemResolver)

    @classmethod
    def from_settings(cls, settings: Settings, resolver: Resolver | None = None
                      ) -> DeliveryOptions:
        return cls(connect_timeout_s=settings.webhook_connect_timeout_s,
                   read_timeout_s=settings.webhook_read_timeout_s,
                   allow_private=settings.webhook_allow_private,
                   resolver=resolver or SystemResolver())


def private_allowed(webhook: Webhook, options: DeliveryOptions) -> bool:
    """Whether a delivery to ``webhook`` may reach internal addresses: the decision the
    registering process recorded, so the server, a CLI ingest and a worker deliver a
    webhook alike whatever their environments. A webhook registered as public stays
    public: each delivery still resolves its name and refuses an internal address."""
    return options.allow_private if webhook.allow_private is None else webhook.allow_private


def deliver_once(webhook: Webhook, event: Event, options: DeliveryOptions) -> int:
    """POST ``event`` to ``webhook.url``, signed, and return the 2xx status.

    The host is resolved once, every address checked (``private_allowed`` says
    whether internal ones may be reached), and the request sent to the first one
    with the name in the Host header and TLS server name. Redirects are not
    followed: a 3xx is a failed attempt (a signed body goes where it was
    registered, and a redirect could point anywhere, a private address included).
    Raises ``WebhookTargetRefusedError`` (permanent) for a refused address and
    ``WebhookDeliveryError`` (retryable) for anything else that is not a 2xx.
    """
    where = f"webhook {webhook.webhook_id} at {redact_url(webhook.url)}"
    try:
        target = parse_target(webhook.url)
    except ValueError as exc:
        raise WebhookTargetRefusedError(f"{where}: unusable URL: {exc}") from None
    try:
        addresses = resolve_target(target, options.resolver,
                                   allow_private=private_allowed(webhook, options))
    except WebhookTargetRefusedError as exc:
        raise WebhookTargetRefusedError(f"{where}: {exc}") from None
    except OSError as exc:
        raise WebhookDeliveryError(f"{where}: {target.host} does not resolve: {exc}") from exc
    pinned = pin_target(target, addresses[0])
    body = event_body(event)
    headers = signed_headers(webhook, event, body, int(time.time()))
    headers["Host"] = pinned.host_header
    user, password = target.parts.username, target.parts.password
    auth = (unquote(user), unquote(password or "")) if user is not None else None
    extensions = {"sni_hostname": pinned.sni_hostname} if pinned.sni_hostname else {}
    timeout = httpx.Timeout(options.read_timeout_s, connect=options.connect_timeout_s)
    try:
        # trust_env off: a proxy from the environment would connect to the name, not
        # to the address that was checked.
        with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False,
                          auth=auth) as client, \
                client.stream("POST", pinned.url, content=body, headers=headers,
                              extensions=extensions) as response:
            if response.is_success:
                status = response.status_code
            else:
                excerpt = _first_bytes(response).decode("utf-8", "replace").strip()
                raise WebhookDeliveryError(
                    f"{where} answered HTTP {response.status_code}"
                    + (f": {excerpt}" if excerpt else ""), status=response.status_code)
    except httpx.TimeoutException as exc:
        raise WebhookDeliveryError(
            f"{where}: no answer within {options.connect_timeout_s:g} s (connect) / "
            f"{options.read_timeout_s:g} s (read) ({type(exc).__name__})") from exc
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise WebhookDeliveryError(f"{where}: request failed: {type(exc).__name__}: "
                                   f"{redact_url(str(exc))}") from exc
    log.info("webhook_delivered", webhook_id=webhook.webhook_id, event_id=event.event_id,
             event_type=event.event_type.value, url=redact_url(webhook.url), status=status)
    return status


def _first_bytes(response: httpx.Response) -> bytes:
    """At most ``MAX_ERROR_BODY`` bytes of the body: a receiver's reply is read no further."""
    got = b""
    for chunk in response.iter_bytes():
        got += chunk
        if len(got) >= MAX_ERROR_BODY:
            break
    return got[:MAX_ERROR_BODY]
