"""Per-endpoint circuit breakers and send slots for webhook deliveries.

An endpoint (``scheme://host:port``) that failed ``failures`` attempts in a row is
*open* for ``cooldown_s``: its deliveries wait instead of each spending a timeout
on it. After the cool-down one attempt goes through (*half-open*); a success closes
the breaker, a failure opens it for another cool-down. The slot (``EndpointSlots``)
keeps one attempt at a time in flight per endpoint, so a slow receiver holds one
sender, never all of them.

``MemoryBreaker`` serves one process (the embedded sender, whose per-endpoint lanes
already send one at a time). With a broker the webhook workers share
``RedisBreaker`` and ``RedisSlots`` over the broker's Redis.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import redis

from hopindex.core.errors import BackendUnavailableError

KEY_PREFIX = "hopindex:webhook:"
# Breaker records outlive any cool-down this long, then Redis forgets a quiet endpoint.
RECORD_TTL_S = 86_400


class CircuitBreaker(Protocol):
    def blocked_for_s(self, endpoint: str) -> float:
        """Seconds until ``endpoint`` may be tried again; 0 when it may be now."""
        ...

    def record_success(self, endpoint: str) -> None: ...

    def record_failure(self, endpoint: str) -> bool:
        """Count a failed attempt; True when this one opened (or re-opened) the breaker."""
        ...


class EndpointSlots(Protocol):
    def acquire_slot(self, endpoint: str, hold_s: float) -> str | None:
        """A token for the endpoint's one slot, held at most ``hold_s``; None when taken."""
        ...

    def release_slot(self, endpoint: str, token: str) -> None: ...


@dataclass(slots=True)
class _State:
    failures: int = 0
    open_until: float = 0.0


class MemoryBreaker:
    """``CircuitBreaker`` in this process's memory, safe for several threads."""

    def __init__(self, failures: int, cooldown_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._failures = failures
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._states: dict[str, _State] = {}

    def blocked_for_s(self, endpoint: str) -> float:
        with self._lock:
            state = self._states.get(endpoint)
            return 0.0 if state is None else max(0.0, state.open_until - self._clock())

    def record_success(self, endpoint: str) -> None:
        with self._lock:
            self._states.pop(endpoint, None)

    def record_failure(self, endpoint: str) -> bool:
        with self._lock:
            state = self._states.setdefault(endpoint, _State())
            state.failures += 1
            if state.failures < self._failures:
                return False
            state.open_until = self._clock() + self._cooldown_s
            return True


def _key(kind: str, endpoint: str) -> str:
    # Hashed: an endpoint is a host name, and keys need not show it.
    return f"{KEY_PREFIX}{kind}:{hashlib.sha256(endpoint.encode()).hexdigest()[:32]}"


# Count the failure; once at the threshold, open until now + cool-down. Atomic, so two
# workers failing at once count twice and open once.
_RECORD_FAILURE = """
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
redis.call('EXPIRE', KEYS[1], ARGV[4])
if failures >= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'open_until', tonumber(ARGV[2]) + tonumber(ARGV[3]))
  return 1
end
return 0
"""
# Delete the slot only if this holder's token is still in it (not a later holder's).
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisBreaker:
    """``CircuitBreaker`` shared by every webhook worker (wall-clock time: workers on
    different machines compare it)."""

    def __init__(self, client: redis.Redis, failures: int, cooldown_s: float,
                 clock: Callable[[], float] = time.time) -> None:
        self._client = client
        self._failures = failures
        self._cooldown_s = cooldown_s
        self._clock = clock

    def blocked_for_s(self, endpoint: str) -> float:
        try:
            raw = self._client.hget(_key("breaker", endpoint), "open_until")
        except redis.RedisError as exc:
            raise BackendUnavailableError(f"webhook breaker: Redis: {exc}") from exc
        return 0.0 if raw is None else max(0.0, float(raw) - self._clock())

    def record_success(self, endpoint: str) -> None:
        try:
            self._client.delete(_key("breaker", endpoint))
        except redis.RedisError as exc:
            raise BackendUnavailableError(f"webhook breaker: Redis: {exc}") from exc

    def record_failure(self, endpoint: str) -> bool:
        try:
            opened = self._client.eval(_RECORD_FAILURE, 1, _key("breaker", endpoint),
                                       self._failures, self._clock(), self._cooldown_s,
                                       RECORD_TTL_S)
        except redis.RedisError as exc:
            raise BackendUnavailableError(f"webhook breaker: Redis: {exc}") from exc
        return bool(opened)


class RedisSlots:
    """``EndpointSlots`` as one Redis key per endpoint, set only when absent and with an
    expiry, so a worker killed mid-attempt frees the slot after ``hold_s``."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client

    def acquire_slot(self, endpoint: str, hold_s: float) -> str | None:
        token = secrets.token_hex(8)
        try:
            taken = self._client.set(_key("slot", endpoint), token, nx=True,
                                     px=max(1, int(hold_s * 1000)))
        except redis.RedisError as exc:
            raise BackendUnavailableError(f"webhook slot: Redis: {exc}") from exc
        return token if taken else None

    def release_slot(self, endpoint: str, token: str) -> None:
        try:
            self._client.eval(_RELEASE, 1, _key("slot", endpoint), token)
        except redis.RedisError as exc:
            raise BackendUnavailableError(f"webhook slot: Redis: {exc}") from exc
