"""How many failed authentications a client may cause: a token bucket per client address.

Every 401 takes a token from its client's bucket; a request whose key is not plainly
right and finds the bucket empty gets a 429 with ``Retry-After`` before any scrypt
check of its key, so guessing keys, or making the server run scrypt checks, is paced
per client. A key that is right
never touches the bucket: several clients behind one proxy share an address, and one
of them failing must not lock the others out. Clients are IPv4 addresses or IPv6 /64
networks (what one host usually gets); at most ``MAX_CLIENTS`` buckets are kept, the
least recently failing dropped first (a dropped bucket is as good as a full one).

A 429 is sent after a pause (:class:`FailurePause`, up to ``MAX_PAUSE_S``): a client
that keeps sending without a valid key on a few connections then sends a few requests
a second instead of thousands, each of which would cost the server as much as a query's
HTTP handling. Pausing costs no CPU; at most ``MAX_PAUSED`` answers wait at once, and
beyond that they go out at once.
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

MAX_CLIENTS = 10_000
IPV6_CLIENT_PREFIX = 64
MAX_PAUSE_S = 1.0
MAX_PAUSED = 1024


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated_s: float


def client_of(remote: str | None) -> str:
    """The bucket a peer address falls into: the address, or its /64 for IPv6."""
    if not remote:
        return "unknown"  # a Unix socket: one local client
    try:
        address = ipaddress.ip_address(remote)
    except ValueError:
        return remote
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_CLIENT_PREFIX), strict=False))
    return str(address)


class FailureLimiter:
    """``burst`` failures at once, then ``per_minute``; ``per_minute`` 0 never limits."""

    def __init__(self, burst: int, per_minute: int, *, max_clients: int = MAX_CLIENTS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._burst = float(burst)
        self._rate_per_s = per_minute / 60.0
        self._max_clients = max_clients
        self._clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        # Held for dictionary updates only; taken from the event loop and never across
        # an await, so it is never contended for long.
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self._rate_per_s > 0

    def take(self, client: str) -> float | None:
        """Take a token for a request that may fail: None when one was there, else the
        seconds until the next one (what ``Retry-After`` says)."""
        if not self.enabled:
            return None
        with self._lock:
            bucket = self._refilled(client)
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return None
            return (1.0 - bucket.tokens) / self._rate_per_s

    def give_back(self, client: str) -> None:
        """Return a token taken for a request that turned out right."""
        if not self.enabled:
            return
        with self._lock:
            bucket = self._buckets.get(client)
            if bucket is not None:
                bucket.tokens = min(self._burst, bucket.tokens + 1.0)

    def tracked_clients(self) -> int:
        return len(self._buckets)

    def _refilled(self, client: str) -> _Bucket:
        now = self._clock()
        bucket = self._buckets.get(client)
        if bucket is None:
            bucket = _Bucket(tokens=self._burst, updated_s=now)
            self._buckets[client] = bucket
            while len(self._buckets) > self._max_clients:
                self._buckets.popitem(last=False)
        else:
            elapsed = max(0.0, now - bucket.updated_s)
            bucket.tokens = min(self._burst, bucket.tokens + elapsed * self._rate_per_s)
            bucket.updated_s = now
            self._buckets.move_to_end(client)
        return bucket


class FailurePause:
    """Holds back 429s (event-loop only: the count is not locked)."""

    def __init__(self, max_pause_s: float = MAX_PAUSE_S, max_paused: int = MAX_PAUSED) -> None:
        self._max_pause_s = max_pause_s
        self._max_paused = max_paused
        self.paused = 0

    async def pause(self, wait_s: float) -> None:
        """Wait ``wait_s`` (the client's Retry-After), at most ``max_pause_s``; not at all
        when ``max_paused`` answers are waiting already."""
        if self.paused >= self._max_paused:
            return
        self.paused += 1
        try:
            await asyncio.sleep(min(wait_s, self._max_pause_s))
        finally:
            self.paused -= 1


def retry_after_header(wait_s: float) -> str:
    """Whole seconds, rounded up, at least 1: a client retrying then finds a token."""
    return str(max(1, math.ceil(wait_s)))
