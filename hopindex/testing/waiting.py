"""Waiting in tests: on a condition, with a deadline, never for a fixed time.

A test that sleeps and then asserts is a race: on a busy 2-core machine the system
under test may not have got there yet (a false failure), and a "nothing else
arrived" check after a sleep passes vacuously when the bug is slower than the sleep.
Tests wait with ``wait_until`` on what they expect to see, and check that nothing
else happened only once a positive signal shows the system has passed the point
where it would have done it.

Deadlines are generous on purpose: they bound a failing test's time, not a passing
one's, since ``wait_until`` returns as soon as the condition holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_INTERVAL_S = 0.02


def wait_until(condition: Callable[[], T | None], *, what: str,
               timeout_s: float = DEFAULT_TIMEOUT_S,
               interval_s: float = DEFAULT_INTERVAL_S) -> T:
    """The first truthy value ``condition`` returns, polled every ``interval_s``;
    AssertionError naming ``what`` (and the last value seen) past ``timeout_s``.

    A condition returning ``X | None`` gives an ``X``: None is never returned."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what} "
                                 f"(last seen: {value!r})")
        time.sleep(interval_s)  # the poll interval of a deadline-bound wait


def settled(read: Callable[[], T], *, quiet_s: float, what: str,
            timeout_s: float = DEFAULT_TIMEOUT_S,
            interval_s: float = DEFAULT_INTERVAL_S) -> T:
    """``read()`` once it has not changed for ``quiet_s`` (it keeps moving → wait on),
    AssertionError naming ``what`` if it never holds still within ``timeout_s``.

    For counts whose final value no signal announces (requests already in flight
    coming back); pair it with a positive signal where one exists."""
    seen = read()
    deadline = time.monotonic() + timeout_s
    still_since = time.monotonic()
    while time.monotonic() - still_since < quiet_s:
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} never held still for {quiet_s} s within "
                                 f"{timeout_s} s (last seen: {seen!r})")
        time.sleep(interval_s)  # the poll interval of a deadline-bound wait
        now = read()
        if now != seen:
            seen, still_since = now, time.monotonic()
    return seen
