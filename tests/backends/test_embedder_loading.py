"""The embedder load clock: what a model load inside a timed block adds up to, and what
it does not count."""

from __future__ import annotations

import contextvars
import threading
from types import SimpleNamespace

import pytest

from hopindex.backends.embedder import loading
from hopindex.backends.embedder.loading import loading as load_block
from hopindex.backends.embedder.loading import loads_so_far, timed_loads
from tests.clocks import ManualClock


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> ManualClock:
    """The loading module's ``perf_counter``, replaced: a load lasts exactly what the
    test advances inside it."""
    fake = ManualClock()
    monkeypatch.setattr(loading, "time", SimpleNamespace(perf_counter=fake))
    return fake


def test_loads_inside_a_block_add_up_and_nothing_else_counts(clock: ManualClock) -> None:
    """Two loads inside ``timed_loads`` sum; the time between them is not a load, and a
    load outside any block is counted nowhere."""
    with load_block():
        clock.advance(9.0)  # no clock open: counted nowhere
    assert loads_so_far() == 0.0
    with timed_loads() as loads:
        with load_block():
            clock.advance(1.5)
        clock.advance(4.0)  # the query's own work
        with load_block():
            clock.advance(0.25)
        assert loads_so_far() == pytest.approx(1.75)
    assert loads.read() == pytest.approx(1.75)
    assert loads_so_far() == 0.0


def test_an_inner_block_counts_for_the_outer_one_too(clock: ManualClock) -> None:
    """A timed block inside another (an evaluation around a query) sees its own loads;
    the outer one sees them as well."""
    with timed_loads() as outer:
        with load_block():
            clock.advance(1.0)
        with timed_loads() as inner, load_block():
            clock.advance(2.0)
    assert outer.read() == pytest.approx(3.0)
    assert inner.read() == pytest.approx(2.0)


def test_a_load_that_fails_still_counts(clock: ManualClock) -> None:
    """A model that fails to load took the time it took: still not the query's."""
    with timed_loads() as loads, pytest.raises(RuntimeError), load_block():
        clock.advance(0.5)
        raise RuntimeError("weights missing")
    assert loads.read() == pytest.approx(0.5)


def test_a_load_in_a_pool_thread_counts_for_the_query(clock: ManualClock) -> None:
    """A query method running a step in a thread with the query's context copied (as
    the LLM steps do) charges a load made there to the query's clock."""
    with timed_loads() as loads:
        context = contextvars.copy_context()

        def load_there() -> None:
            with load_block():
                clock.advance(0.75)

        thread = threading.Thread(target=context.run, args=(load_there,))
        thread.start()
        thread.join()
    assert loads.read() == pytest.approx(0.75)
