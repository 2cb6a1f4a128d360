"""A clock that moves only when a test moves it.

Code under test that reads an injectable clock (``time.monotonic``, ``perf_counter``)
gets one of these: a cool-down, a backoff or a measured phase then lasts exactly as
long as the test says, however slow or busy the machine is.
"""

from __future__ import annotations


class ManualClock:
    """Call it for the time; ``advance`` moves it on."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
