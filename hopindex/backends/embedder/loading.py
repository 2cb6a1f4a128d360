"""Time spent loading an embedding model, kept apart from the work that waited for it.

A local embedder loads its model on first use, inside whatever call needed it: in a
fresh process the first query's ``embed_query`` spends seconds loading and a few
milliseconds embedding. An embedder reports its one-off load (the model and a first
run on a short text, whose set-up costs the next call would otherwise pay) with
``loading()``; a caller that times work opens ``timed_loads()`` around it and takes
the load out of its figures (``Hopindex.query``, ``PhaseTimer``). A context variable
rather than an argument, as with the embedding meter (``metering.py``): the
``Embedder`` protocol stays as it is, and concurrent queries each see their own clock.
A query waiting on the lock while another loads the model counts that wait as its
load too: it is what the query waited for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass(slots=True)
class LoadClock:
    """Seconds spent loading models inside one ``timed_loads()`` block; safe to share
    between threads (a copied context carries the same clock into a pool)."""

    seconds: float = 0.0
    # The clock open around this one: its figure includes this one's.
    parent: LoadClock | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, seconds: float) -> None:
        clock: LoadClock | None = self
        while clock is not None:
            with clock._lock:
                clock.seconds += seconds
            clock = clock.parent

    def read(self) -> float:
        with self._lock:
            return self.seconds


_current_clock: ContextVar[LoadClock | None] = ContextVar("hopindex_embedder_load_clock",
                                                          default=None)


@contextmanager
def timed_loads() -> Iterator[LoadClock]:
    """A fresh clock that adds up the model loads made inside the block."""
    clock = LoadClock(parent=_current_clock.get())
    token = _current_clock.set(clock)
    try:
        yield clock
    finally:
        _current_clock.reset(token)


@contextmanager
def loading() -> Iterator[None]:
    """Count the block (a model load, waiting for another thread's included) on the
    current clock; outside ``timed_loads()`` nothing is counted."""
    started = time.perf_counter()
    try:
        yield
    finally:
        clock = _current_clock.get()
        if clock is not None:
            clock.add(time.perf_counter() - started)


def loads_so_far() -> float:
    """Seconds the current clock has counted (0 outside ``timed_loads()``): a timer
    reads it before and after a step to leave out a load made during the step."""
    clock = _current_clock.get()
    return clock.read() if clock is not None else 0.0
