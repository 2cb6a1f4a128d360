"""The distributed event log: a Redis Stream every worker appends to (docs/architecture.md).

Keys: ``{prefix}:events``, a stream of entries with ``type``, ``index``, ``job_id``,
``data`` (JSON) and ``created_at``, trimmed to about ``retention`` entries
(HOPINDEX_EVENT_RETENTION); and ``{prefix}:webhooks``, a hash of webhook id to its
JSON record. Ids are the stream's own (``<ms>-<seq>``): Redis assigns them in append
order across every client.

The stream holds every index's events, so an index filter is applied here while
reading on.

Trimming is told apart from a cursor that merely predates the log by a ``prev`` field
on each entry, the id of the entry appended before it (written by one script with the
XADD, so appends from many processes agree). Trimming removes a prefix of the stream,
so the oldest kept entry's ``prev`` is the newest id trimmed away. Each page is read
in one transaction with XINFO STREAM, whose ``first-entry`` carries that field: a
cursor below it had events trimmed after it, an ``EventsGoneError`` rather than a
silent skip to the oldest kept. (The stream's own ``max-deleted-entry-id`` does not
serve: Redis advances it on XDEL, not when XADD or XTRIM trim.)
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

from hopindex.backends.events.codec import (
    MAX_EVENTS,
    check_limit,
    check_retention,
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
    EventsGoneError,
    InvalidInputError,
)
from hopindex.core.events import Event, EventType, Webhook
from hopindex.core.logging import get_logger

log = get_logger(__name__)

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
StreamId = tuple[int, int]

# XADD with the ``prev`` field, trimmed to ARGV[2] entries (ARGV[1]: "~" approximate,
# "=" exact), the event's fields after. The log never trims its stream empty, so the
# newest entry left is the one appended before.
_APPEND = """
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local prev = '0-0'
if newest[1] then prev = newest[1][1] end
local command = {'XADD', KEYS[1], 'MAXLEN', ARGV[1], ARGV[2], '*', 'prev', prev}
for i = 3, #ARGV do command[#command + 1] = ARGV[i] end
return redis.call(unpack(command))
"""


def _parse_id(event_id: str) -> StreamId | None:
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


def _trimmed_through(info: dict[str, Any] | None) -> StreamId:
    """The newest id trimmed from the stream (0-0: none): the oldest kept entry's
    ``prev``. An entry appended before ``prev`` was written says less: then the stream
    counts as untrimmed when Redis (7.0+) reports every entry ever added still there,
    else every id older than the oldest kept counts as trimmed, which may call a
    cursor gone that lost nothing, never the other way round."""
    if info is None:
        return (0, 0)
    first = info.get("first-entry")
    if not first:
        # Emptied from outside (the log keeps at least one): everything issued is gone.
        return _parse_id(str(info.get("last-generated-id", START))) or (0, 0)
    oldest_id, fields = first
    prev = fields.get("prev") if isinstance(fields, dict) else None
    if prev is not None:
        return _parse_id(str(prev)) or (0, 0)
    added = info.get("entries-added")
    if added is not None and added == info.get("length"):
        return (0, 0)
    ms, seq = _parse_id(str(oldest_id)) or (0, 0)
    # The id just below the oldest kept (ids start above 0-0).
    return (ms, seq - 1) if seq else (ms - 1, _MAX_PART)


def _oldest_kept(info: dict[str, Any] | None) -> str | None:
    first = info.get("first-entry") if info else None
    return str(first[0]) if first else None


def _xrange_page(stream: str, start: str, count: int, pipe: Any) -> None:
    pipe.xrange(stream, start, "+", count=count)


class RedisEventLog:
    """``EventLog`` over one Redis; any number of processes share it.

    ``approximate`` trimming (``MAXLEN ~``) lets Redis drop only whole macro-nodes, far
    cheaper than exact: up to one macro-node (``stream-node-max-entries``, 100 by
    default) more than ``retention`` may be kept. Exact trimming is for tests that
    count what is kept.
    """

    def __init__(self, url: str, prefix: str = "hopindex", *, retention: int = MAX_EVENTS,
                 approximate: bool = True) -> None:
        self._retention = check_retention(retention)
        self.url = public_url(url)
        self._stream = f"{prefix}:events"
        self._webhooks = f"{prefix}:webhooks"
        self._closed = False
        self._trim = ("~" if approximate else "=", str(self._retention))
        try:
            # No connection is made here: the first command connects, so a Redis that
            # is down fails at first use, as a retryable error.
            self._client: redis.Redis = redis.Redis.from_url(
                url, decode_responses=True, socket_connect_timeout=CONNECT_TIMEOUT_S,
                socket_timeout=SOCKET_TIMEOUT_S)
        except ValueError as exc:  # redis-py's word for a malformed URL
            raise ConfigError(f"event log Redis URL {self.url!r} is malformed: {exc}") from exc
        self._append = self._client.register_script(_APPEND)
        log.info("event_log_opened", backend="redis", url=self.url, stream=self._stream)

    @property
    def retention(self) -> int:
        """How many events the log keeps, the newest (approximate trimming keeps some
        more)."""
        return self._retention

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
        fields = ("type", kind.value, "index", index, "job_id", job_id, "data", encoded,
                  "created_at", repr(created_at))
        event_id: str = self._run("append_event", lambda: self._append(
            keys=[self._stream], args=[*self._trim, *fields]))
        return Event(event_id=event_id, event_type=kind, index=index, job_id=job_id,
                     data=decode_data(encoded), created_at=created_at)

    def _info_and(self, what: str,
                  read: Callable[[Any], Any]) -> tuple[dict[str, Any] | None, Any]:
        """XINFO STREAM and ``read(pipeline)``'s reply from one transaction, so the trim
        state is the one the read saw. The info is None while the stream does not exist."""

        def both() -> list[Any]:
            pipe = self._client.pipeline(transaction=True)
            pipe.xinfo_stream(self._stream)
            read(pipe)
            return pipe.execute(raise_on_error=False)

        info, reply = self._run(what, both)
        if isinstance(reply, Exception):
            raise BackendError(f"event log Redis at {self.url} failed ({what}): {reply}")
        if isinstance(info, Exception):
            # XINFO fails on a missing key, the one case where there is nothing to say.
            if "no such key" not in str(info).lower():
                raise BackendError(f"event log Redis at {self.url} failed ({what}): {info}")
            return None, reply
        return info, reply

    def _check_kept(self, info: dict[str, Any] | None, position: StreamId,
                    asked: str | None) -> None:
        """EventsGoneError when entries after ``position`` were trimmed; the reader asked
        for those after ``asked`` (None: from the start, where whatever is kept is all
        there is to read)."""
        if asked is not None and _trimmed_through(info) > position:
            raise EventsGoneError(asked, _oldest_kept(info), self._retention)

    def _position(self, after_id: str | None) -> str:
        """The stream id to read after; see the ``EventLog`` docstring for what is accepted."""
        if after_id is None:
            return START
        wanted = _parse_id(after_id)
        if wanted is None:
            raise InvalidInputError(f"malformed event id {after_id!r}: this log's ids look "
                                    "like 1732186800000-0", where="from")
        same: list[Entry]
        info, same = self._info_and("read_events", lambda pipe: pipe.xrange(
            self._stream, after_id, after_id, count=1))
        self._check_kept(info, wanted, after_id)
        oldest = _oldest_kept(info)
        oldest_id = _parse_id(oldest) if oldest is not None else None
        if same or (oldest_id is not None and wanted < oldest_id):
            return after_id
        raise InvalidInputError(f"unknown event id {after_id!r}: this log never issued it",
                                where="from")

    def _scan(self, position: str, index: str | None, limit: int,
              asked: str | None) -> tuple[list[Event], str]:
        """Up to ``limit`` events after ``position``, and the id scanned up to. Each page
        is checked against the trim it was read with, ``asked`` naming the reader's id."""
        found: list[Event] = []
        cursor = position
        page = limit if index is None else max(limit, FILTER_PAGE)
        while len(found) < limit:
            start = f"({cursor}"
            batch: list[Entry]
            info, batch = self._info_and("read_events", partial(
                _xrange_page, self._stream, start, page))
            if cursor != START:
                self._check_kept(info, _parse_id(cursor) or (0, 0), asked)
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
        found, _ = self._scan(self._position(after_id), index, limit, after_id)
        return found

    def wait_events(self, after_id: str | None, index: str | None, timeout_s: float,
                    limit: int = 100) -> list[Event]:
        check_limit(limit)
        deadline = time.monotonic() + max(0.0, timeout_s)
        found, cursor = self._scan(self._position(after_id), index, limit, after_id)
        while not found:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            block_ms = max(1, int(min(remaining, BLOCK_CHUNK_S) * 1000))
            # XREAD only wakes us: the scan below applies the index filter and limit.
            woke: Any = self._run("wait_events", partial(
                self._client.xread, {self._stream: cursor}, count=1, block=block_ms))
            if woke:
                found, cursor = self._scan(cursor, index, limit, after_id)
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
