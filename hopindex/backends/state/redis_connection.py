"""The Redis client behind ``RedisStateStore``: key names, chunked pipelines, error mapping.

Key layout (``P`` is the store's prefix, ``I`` an index name):

- ``P:indexes`` hash name → index record; ``P:job:<id>`` hash (data, member) per job;
  ``P:jobs`` sorted set of every job; ``P:jobseq`` the jobs' insertion counter;
  ``P:joblease:<id>`` the short lease that serialises ``update_job`` writers.
- ``P:ix:I:…`` everything owned by one index (documents, units, mentions, groups, records,
  the index's job list), so deleting an index is a scan of that one prefix.

Index names are validated at ``create_index`` (no ``:`` or glob characters); a
name outside that pattern is percent-encoded in key names, so no index's prefix
is ever a prefix of another's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import quote

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.client import Pipeline
from redis.commands.core import Script
from redis.retry import Retry

from hopindex.backends.llm.ratelimit_redis import public_url
from hopindex.core.errors import BackendError, BackendUnavailableError, ConfigError
from hopindex.core.logging import get_logger

log = get_logger(__name__)

T = TypeVar("T")

# Ids per command: big enough that 10k ids are 10 commands, small enough that no
# single command holds the server for long.
CHUNK = 1000
# Commands sent per round trip; bounds the replies held in memory at once.
COMMANDS_PER_TRIP = 16
SOCKET_CONNECT_TIMEOUT_S = 5.0
# Generous: a bulk script over 1000 units or a large HGETALL may take a while on
# a loaded server, and a timeout mid-write only makes the caller retry it.
SOCKET_TIMEOUT_S = 30.0
# redis-py's default (10 retries up to 1 s apart) would stall an unreachable URL for
# seconds; two quick retries ride out a dropped idle connection or a failover.
_RETRY = Retry(ExponentialWithJitterBackoff(cap=0.5, base=0.02), retries=2)
# SMISMEMBER and SET ... GET need 6.2.
MIN_SERVER_VERSION = (6, 2)

_SAFE_NAME = re.compile(r"[a-z0-9_-]+")
_GLOB = re.compile(r"([*?\[\]\\])")


@functools.lru_cache(maxsize=4096)
def key_part(name: str) -> str:
    """``name`` as it appears inside a key: unchanged when safe, else percent-encoded."""
    if _SAFE_NAME.fullmatch(name):
        return name
    return quote(name, safe="")


def glob_escape(text: str) -> str:
    """``text`` matched literally by SCAN's MATCH pattern."""
    return _GLOB.sub(r"\\\1", text)


def chunked(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def unique(ids: Sequence[str]) -> list[str]:
    """Ids in first-asked order, each once: what every ordered read returns."""
    return list(dict.fromkeys(ids))


def text(value: bytes | str | None) -> str | None:
    """A reply as str: redis-py types replies as bytes or str whatever ``decode_responses``."""
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _version(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


class RedisConnection:
    """One redis-py client (thread-safe, fork-safe pool) and the helpers every mixin uses."""

    def __init__(self, url: str, prefix: str = "hopindex") -> None:
        self.url = public_url(url)
        self._prefix = prefix
        self._closed = False
        self._scripts: dict[str, Script] = {}
        try:
            # decode_responses: every value stored here is text written by this
            # class; str replies spare a decode at each call site.
            self._client = redis.Redis.from_url(
                url, decode_responses=True, socket_connect_timeout=SOCKET_CONNECT_TIMEOUT_S,
                socket_timeout=SOCKET_TIMEOUT_S, retry=_RETRY, health_check_interval=30)
        except ValueError as exc:  # redis-py's word for a malformed URL
            raise ConfigError(f"state Redis URL {self.url!r} is malformed: {exc}") from exc
        # Unlike the LLM cache, the state store is needed for anything to work: an
        # unreachable or too old server is reported when the service opens it.
        try:
            with self._errors("open"):
                info: dict[str, Any] = self._client.info("server")
            version = str(info.get("redis_version", "0"))
            if _version(version) < MIN_SERVER_VERSION:
                raise BackendError(
                    f"redis state store at {self.url}: server {version} is too old "
                    f"(need {'.'.join(map(str, MIN_SERVER_VERSION))} or newer)")
        except BaseException:
            self._client.close()
            raise
        log.info("state_store_opened", url=self.url, prefix=prefix, server_version=version)

    # -- key names ---------------------------------------------------------------------------

    def _key(self, *parts: str) -> str:
        return ":".join((self._prefix, *parts))

    def _base(self, index: str) -> str:
        """The prefix of every key the index owns, with its trailing colon."""
        return f"{self._prefix}:ix:{key_part(index)}:"

    def _index_pattern(self, index: str) -> str:
        return f"{glob_escape(self._base(index))}*"

    # -- calls -------------------------------------------------------------------------------

    def _redis(self) -> redis.Redis:
        if self._closed:
            raise BackendError(f"redis state store at {self.url} is closed")
        return self._client

    @contextmanager
    def _errors(self, operation: str) -> Iterator[None]:
        """Map redis-py's errors onto hopindex's: unreachable is retryable, the rest not."""
        try:
            yield
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            log.warning("state_store_unreachable", url=self.url, operation=operation,
                        error=str(exc))
            raise BackendUnavailableError(
                f"redis state store at {self.url} is unreachable ({operation}): {exc}") from exc
        except redis.RedisError as exc:
            raise BackendError(
                f"redis state store at {self.url}: {operation} failed: {exc}") from exc

    def _script(self, source: str) -> Script:
        """The registered script for ``source``: EVALSHA, loaded once per server."""
        client = self._redis()  # a closed store refuses scripts too
        script = self._scripts.get(source)
        if script is None:
            script = self._scripts[source] = client.register_script(source)
        return script

    def _batched(self, operation: str, items: Sequence[T],
                 add: Callable[[Pipeline, Sequence[T]], object], *,
                 transaction: bool = False, size: int = CHUNK) -> list[Any]:
        """Queue ``add(pipe, chunk)`` for each chunk of ``items``; every command's reply.

        Chunks travel ``COMMANDS_PER_TRIP`` to a round trip. ``transaction`` wraps each
        trip in MULTI/EXEC, so reads spanning several keys see one moment.
        """
        replies: list[Any] = []
        if not items:
            return replies
        with self._errors(operation):
            for trip in chunked(items, size * COMMANDS_PER_TRIP):
                with self._redis().pipeline(transaction=transaction) as pipe:
                    for chunk in chunked(trip, size):
                        add(pipe, chunk)
                    replies.extend(pipe.execute())
        return replies

    def close(self) -> None:
        """Close the connection pool; closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        self._client.close()
        log.debug("state_store_closed", url=self.url)
