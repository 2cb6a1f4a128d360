"""The JSON both event log adapters store (event data and webhook records), and the
checks of what both are given."""

from __future__ import annotations

import json
from typing import Any

from hopindex.core.errors import BackendError, ConfigError, InvalidInputError
from hopindex.core.events import Webhook

# Events a log keeps when its opener names no retention (HOPINDEX_EVENT_RETENTION's
# default).
MAX_EVENTS = 100_000
# One encoder for every call: json.dumps with non-default arguments builds a new one.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def check_retention(retention: int) -> int:
    """``retention`` when a log can keep that many events: one at least, or every
    append would trim itself away."""
    if retention < 1:
        raise ConfigError(f"HOPINDEX_EVENT_RETENTION must be 1 or more (events the event "
                          f"log keeps), got {retention}")
    return retention


def encode_data(data: dict[str, Any]) -> str:
    """Compact JSON of an event's data; refused up front so nothing half-encodable is
    stored and every consumer (webhooks, SSE, ``--json``) can read what is."""
    try:
        return _ENCODER.encode(data)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"event data is not JSON: {exc}", where="data") from exc


def decode_data(text: str | bytes) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BackendError(f"event log holds malformed event data: {exc}") from exc
    if not isinstance(data, dict):
        raise BackendError(f"event log holds event data that is a {type(data).__name__}")
    return data


def encode_webhook(webhook: Webhook) -> str:
    record: dict[str, Any] = {"id": webhook.webhook_id, "index": webhook.index,
                              "url": webhook.url, "secret": webhook.secret,
                              "created_at": webhook.created_at}
    if webhook.allow_private is not None:
        record["allow_private"] = webhook.allow_private
    return _ENCODER.encode(record)


def decode_webhook(text: str | bytes) -> Webhook:
    try:
        record = json.loads(text)
        return Webhook(webhook_id=str(record["id"]), index=str(record["index"]),
                       url=str(record["url"]), secret=str(record["secret"]),
                       created_at=float(record["created_at"]),
                       allow_private=decode_allow_private(record.get("allow_private")))
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(f"event log holds a malformed webhook record: {exc!r}") from exc


def decode_allow_private(value: object) -> bool | None:
    """A webhook's recorded decision on private targets: absent (a record from before it
    was recorded) is None; anything but a boolean or 0/1 is a malformed record, never
    read as a permission."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"allow_private is {value!r}, not a boolean")


def check_limit(limit: int) -> int:
    if limit < 1:
        raise InvalidInputError(f"limit must be at least 1, got {limit}", where="limit")
    return limit


def sorted_webhooks(webhooks: list[Webhook]) -> list[Webhook]:
    """Oldest first, so listings are stable across adapters."""
    return sorted(webhooks, key=lambda w: (w.created_at, w.webhook_id))
