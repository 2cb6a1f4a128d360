"""The distributed event log: a Redis Stream every worker appends to (docs/architecture.md).

Keys: ``{prefix}:events``, a stream of entries with ``type``, ``index``, ``job_id``,
``data`` (JSON) and ``created_at``, trimmed to about ``MAX_EVENTS``; and
``{prefix}:webhooks``, a hash of webhook id to its JSON record. Ids are the stream's
own (``<ms>-<seq>``): Redis assigns them in append order across every client.

The stream holds every index's events, so an index filter is applied here while
reading on; a cursor older than the trimmed stream's oldest entry resumes from it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.typing import EncodableT, FieldT

from hopindex.backends.events.codec import (
    check_limit,
    decode_data,
    decode_webhook,
    encode_data,
    encode_webhook,
    sorted_webhooks,
)
from hopindex.backends.llm.ratelimit_redis import public_url
from hopindex.core.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigError,
    InvalidInputError,
)
from hopindex.core.events import Event, EventType, Webhook
from hopindex.core.logging import get_logger

log = get_logger(__name__)

# Approximate (``MAXLEN ~``): Redis trims whole macro-nodes, far cheaper than exact.
MAX_EVENTS = 100_000
CONNECT_TIMEOUT_S = 5.0
# One XREAD BLOCK waits at most this long; the socket timeout must exceed it, or a
# quiet stream would look like a dead server.
BLOCK_CHUNK_S = 2.0
SOCKET_TIMEOUT_S = 10.0
# Entries fetched per round trip while an index filter skips other indexes' events.
FILTER_PAGE = 500
_ID = re.compile(r"([0-9]{1,20})-([0-9]{1,20})")
_MAX_PART = 2**64 - 1
START = "0-0"

Entry = tuple[str, dict[str, str]]


def _parse_id(event_id: str) -> tuple[int, int] | None:
    match = _ID.fullmatch(event_id)
    if match is None:
        return None
    parts = (int(match[1]), int(match[2]))
    return parts if max(parts) <= _MAX_PART else None


def _event(entry: Entry) -> Event:
    event_id, fields = entry
    try:
        return Event(event_id=event_id, event_type=EventType(fields["type"]),
                     index=fields["index"], job_id=fields["job_id"],
                     data=decode_data(fields["data"]), created_at=float(fields["created_at"]))
    except (KeyError, ValueError) as exc:
        raise BackendError(f"event log stream holds a malformed entry {event_id}: "
                           f"{exc!r}") from exc


class RedisEventLog:
    """``EventLog`` over one Redis; any number of processes share it."""

    def __init__(self, url: str, prefix: str = "hopindex") -> None:
        self.url = public_url(url)
        self._stream = f"{prefix}:events"
        self._webhooks = f"{prefix}:webhooks"
        self._closed = False
        try:
            # No connection is made here: the first command connects, so a Redis that
            # is down fails at first use, as a retryable error.
            self._client: redis.Redis = redis.Redis.from_url(
                url, decode_responses=True, socket_connect_timeout=CONNECT_TIMEOUT_S,
                socket_timeout=SOCKET_TIMEOUT_S)
        except ValueError as exc:  # redis-py's word for a malformed URL
            raise ConfigError(f"event log Redis URL {self.url!r} is malformed: {exc}") from exc
        log.info("event_log_opened", backend="redis", url=self.url, stream=self._stream)

    def _run(self, what: str, call: Callable[[], Any]) -> Any:
        """``call()``'s reply with errors mapped. Typed ``Any``: redis-py declares replies as
        unions over bytes and str (and sync and async), but this client decodes to str."""
        if self._closed:
            raise BackendError(f"event log Redis at {self.url} is closed ({what})")
        try:
            return call()
        except (RedisError, OSError, ValueError) as exc:
            if self._closed:
                # Closed by another thread while this call was blocked (a follower in
                # XREAD): redis-py then fails with whatever the torn socket gives.
                raise BackendError(f"event log Redis at {self.url} was closed during "
                                   f"{what}") from exc
            if isinstance(exc, RedisConnectionError | RedisTimeoutError | OSError):
                log.warning("event_log_unreachable", url=self.url, operation=what,
                            error=str(exc))
                raise BackendUnavailableError(
                    f"event log Redis at {self.url} is unreachable ({what}): {exc}") from exc
            if isinstance(exc, RedisError):
                raise BackendError(f"event log Redis at {self.url} failed ({what}): "
                                   f"{exc}") from exc
            raise

    # -- events ----------------------------------------------------------------------------

    def append_event(self, event_type: EventType, index: str, job_id: str,
                     data: dict[str, Any]) -> Event:
        encoded = encode_data(data)
        created_at = time.time()
        kind = EventType(event_type)
        fields: dict[FieldT, EncodableT] = {
            "type": kind.value, "index": index, "job_id": job_id, "data": encoded,
            "created_at": repr(created_at)}
        event_id: str = self._run("append_event", lambda: self._client.xadd(
            self._stream, fields, maxlen=MAX_EVENTS, approximate=True))
        return Event(event_id=event_id, event_type=kind, index=index, job_id=job_id,
                     data=decode_data(encoded), created_at=created_at)

    def _position(self, after_id: str | None) -> str:
        """The stream id to read after; see the ``EventLog`` docstring for what is accepted."""
        if after_id is None:
            return START
        wanted = _parse_id(after_id)
        if wanted is None:
            raise InvalidInputError(f"malformed event id {after_id!r}: this log's ids look "
                                    "like 1732186800000-0", where="from")

        def probe() -> list[list[Entry]]:
            pipe = self._client.pipeline(transaction=False)
            pipe.xrange(self._stream, after_id, after_id, count=1)
            pipe.xrange(self._stream, "-", "+", count=1)
            return pipe.execute()

        same: list[Entry]
        oldest: list[Entry]
        same, oldest = self._run("read_events", probe)
        oldest_id = _parse_id(oldest[0][0]) if oldest else None
        if same or (oldest_id is not None and wanted < oldest_id):
            return after_id
        raise InvalidInputError(f"unknown event id {after_id!r}: this log never issued it",
                                where="from")

    def _scan(self, position: str, index: str | None, limit: int) -> tuple[list[Event], str]:
        """Up to ``limit`` events after ``position``, and the id scanned up to."""
        found: list[Event] = []
        cursor = position
        page = limit if index is None else max(limit, FILTER_PAGE)
        while len(found) < limit:
            start = f"({cursor}"
            batch: list[Entry] = self._run("read_events", partial(
                self._client.xrange, self._stream, start, "+", count=page))
            for entry in batch:
                if index is None or entry[1].get("index") == index:
                    found.append(_event(entry))
                cursor = entry[0]
                if len(found) == limit:
                    # Stop on this entry so the cursor never passes an unreturned match.
                    break
            if len(batch) < page:
                break
        return found, cursor

    def read_events(self, after_id: str | None = None, index: str | None = None,
                    limit: int = 100) -> list[Event]:
        check_limit(limit)
        found, _ = self._scan(self._position(after_id), index, limit)
        return found

    def wait_events(self, after_id: str | None, index: str | None, timeout_s: float,
                    limit: int = 100) -> list[Event]:
        check_limit(limit)
        deadline = time.monotonic() + max(0.0, timeout_s)
        found, cursor = self._scan(self._position(after_id), index, limit)
        while not found:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            block_ms = max(1, int(min(remaining, BLOCK_CHUNK_S) * 1000))
            # XREAD only wakes us: the scan below applies the index filter and limit.
            woke: Any = self._run("wait_events", partial(
                self._client.xread, {self._stream: cursor}, count=1, block=block_ms))
            if woke:
                found, cursor = self._scan(cursor, index, limit)
        return found

    def get_event(self, event_id: str) -> Event | None:
        if _parse_id(event_id) is None:
            return None
        entries: list[Entry] = self._run("get_event", lambda: self._client.xrange(
            self._stream, event_id, event_id, count=1))
        return _event(entries[0]) if entries else None

    def last_event_id(self) -> str | None:
        entries: list[Entry] = self._run("last_event_id", lambda: self._client.xrevrange(
            self._stream, "+", "-", count=1))
        return entries[0][0] if entries else None

    # -- webhooks --------------------------------------------------------------------------

    def put_webhook(self, webhook: Webhook) -> Webhook:
        record = encode_webhook(webhook)
        self._run("put_webhook", lambda: self._client.hset(
            self._webhooks, webhook.webhook_id, record))
        return webhook

    def list_webhooks(self, index: str | None = None) -> list[Webhook]:
        records: dict[str, str] = self._run("list_webhooks",
                                            lambda: self._client.hgetall(self._webhooks))
        hooks = [decode_webhook(text) for text in records.values()]
        return sorted_webhooks([h for h in hooks if index is None or h.index == index])

    def delete_webhook(self, webhook_id: str) -> bool:
        deleted: int = self._run("delete_webhook",
                                 lambda: self._client.hdel(self._webhooks, webhook_id))
        return deleted > 0

    def close(self) -> None:
        # Flagged first: redis-py would silently reconnect on the next command.
        self._closed = True
        self._client.close()
        log.debug("event_log_closed", backend="redis", url=self.url)
