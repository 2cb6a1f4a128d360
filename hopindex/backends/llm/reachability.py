"""Telling a provider that cannot be reached at all from one that answers badly.

The client's patient policy (``HOPINDEX_LLM_MAX_ATTEMPTS`` with full-jitter backoff
up to ``HOPINDEX_LLM_BACKOFF_MAX_S``) is for a provider that answers: slowly, with
429s, with 5xx. Waiting out a minute of backoff makes sense there. A base URL where
nothing listens, or whose host does not resolve, is another matter: it is a wrong
setting or a server that is down, and a batch of twenty documents should not spend
a minute per call finding that out. So a connection that cannot be made at all is
retried quickly (a server restarting comes back within seconds), and given up
``give_up_s`` (``HOPINDEX_LLM_CONNECT_GIVE_UP_S``) after the first such failure.

What one call learns, the client's other calls share: the failures of one
unreachable stretch count from its first failure, whichever call met it, so calls
in flight together give up together, and once the provider is declared unreachable
every call fails at once, with the same message, until a call gets through again
or ``give_up_s`` have passed (then calls try again, and the first refused renews the
verdict at once). A client lives on one event loop (``runner.py``), so this state
needs no lock.
"""

from __future__ import annotations

import errno
import random
import socket
import time
from collections.abc import Callable

from hopindex.core.errors import LlmUnavailableError
from hopindex.core.redact import redact_url

# How long a provider that refuses connections or does not resolve is tried before
# its calls fail: long enough for a local server to restart, far shorter than the
# patient policy's minute of backoff.
CONNECT_GIVE_UP_S = 30.0
# The retries of one unreachable stretch back off up to this, not the patient
# policy's 30 s, so a provider that comes back is found within seconds.
CONNECT_BACKOFF_MAX_S = 4.0
# Every message of an unreachable provider says this: it is how a job whose items
# all failed for it is told from one that failed for other reasons
# (``api/exit_codes.py``), as the job records only the messages.
UNREACHABLE_PHRASE = "cannot reach the LLM provider at"

# Errors of the connection itself that retrying within seconds will not fix. Not a
# timeout (a provider that is slow), nor a reset (one that crashed mid-reply).
_ERRNO_REASONS = {
    errno.ECONNREFUSED: "connection refused",
    errno.EHOSTUNREACH: "no route to host",
    errno.ENETUNREACH: "network unreachable",
}
# Exceptions chain a few levels deep (the SDK's, httpx's, httpcore's, the socket's).
_MAX_CHAIN = 16


def unreachable_reason(exc: BaseException) -> str | None:
    """What kept a connection from being made, when that is why ``exc`` was raised:
    "connection refused", "host does not resolve", ...; None for anything else.

    The SDK wraps every transport failure alike (``APIConnectionError``), so the
    cause is found down the exception's chain, where the socket's own error sits.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < _MAX_CHAIN:
        seen.add(id(current))
        if isinstance(current, socket.gaierror):
            return "host does not resolve"
        if isinstance(current, OSError) and current.errno in _ERRNO_REASONS:
            return _ERRNO_REASONS[current.errno]
        current = current.__cause__ or current.__context__
    return None


def connect_backoff_s(attempt: int, base_s: float) -> float:
    """The pause before the next connection attempt: exponential up to
    ``CONNECT_BACKOFF_MAX_S``, jittered in its upper half so that the number of
    attempts in one stretch stays small and known (unlike full jitter)."""
    ceiling = min(CONNECT_BACKOFF_MAX_S, base_s * 2 ** (attempt - 1))
    return random.uniform(ceiling / 2, ceiling)  # jitter spreads retries; no secrecy


class Reachability:
    """Whether one client's provider can be reached, as its calls found out."""

    def __init__(self, base_url: str, give_up_s: float = CONNECT_GIVE_UP_S, *,
                 backoff_base_s: float = 0.5,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._url = redact_url(base_url)
        self.give_up_s = give_up_s
        self._backoff_base_s = backoff_base_s
        self._clock = clock
        # The first connection failure since a call last got through, and the latest.
        self._since: float | None = None
        self._last: float = 0.0
        self._reason = ""
        # When the provider was declared unreachable: calls fail at once for give_up_s.
        self._declared: float | None = None

    def check(self, stage: str) -> None:
        """Raise ``LlmUnavailableError`` when the provider was found unreachable less
        than ``give_up_s`` ago: no call is sent."""
        if self._declared is not None and self._clock() - self._declared < self.give_up_s:
            raise self._error(stage)

    def connected(self) -> None:
        """A call got through: the stretch is over."""
        self._since = self._declared = None

    def retry(self, stage: str, exc: BaseException, tries: int) -> tuple[str, float] | None:
        """None unless ``exc`` is a connection that could not be made (``unreachable_reason``);
        then what happened and the pause before the call's next attempt, as ``failed``."""
        reason = unreachable_reason(exc)
        return None if reason is None else (reason, self.failed(stage, reason, tries))

    def failed(self, stage: str, reason: str, tries: int) -> float:
        """Record a connection that could not be made (the call's ``tries``-th); the
        pause before the call's next attempt, never past the stretch's end, or
        ``LlmUnavailableError`` once the stretch has lasted ``give_up_s`` (the provider
        is then declared unreachable)."""
        now = self._clock()
        # The stretch goes on until a call gets through, so a call refused after a
        # verdict's hold renews the verdict at once; but a failure long after any other
        # (nothing tried meanwhile) starts a new one: a blip an hour later earns retries.
        if self._since is None or now - self._last > 2 * self.give_up_s:
            self._since = now
        self._last, self._reason = now, reason
        left_s = self._since + self.give_up_s - now
        if left_s <= 0:
            self._declared = now
            raise self._error(stage)
        return min(left_s, connect_backoff_s(tries, self._backoff_base_s))

    def _error(self, stage: str) -> LlmUnavailableError:
        return LlmUnavailableError(
            f"{stage}: {UNREACHABLE_PHRASE} {self._url} ({self._reason}) after "
            f"{self.give_up_s:g}s", retry_after_s=self.give_up_s)


def is_unreachable(reason: str) -> bool:
    """Whether a recorded failure (a job's item error) is the provider unreachable."""
    return UNREACHABLE_PHRASE in reason
