"""The query phase timer: one vocabulary, repeats summed, sub-searches merged."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hopindex.methods import phases
from hopindex.methods.phases import PHASES, PhaseTimer, QueryPhase
from tests.clocks import ManualClock


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> ManualClock:
    """The phases module's ``perf_counter``, replaced: a phase's work is a step of this
    clock, so its measured time is exact rather than at least a sleep."""
    fake = ManualClock()
    monkeypatch.setattr(phases, "time", SimpleNamespace(perf_counter=fake))
    return fake


def test_a_phase_run_twice_sums_its_runs(clock: ManualClock) -> None:
    """IRCoT reasons several times per query: the phase reports their total."""
    timer = PhaseTimer()
    for seconds in (0.01, 0.03):
        with timer.phase(QueryPhase.REASON):
            clock.advance(seconds)
        clock.advance(1.0)  # between runs: not the phase's time
    assert set(timer.phases_s) == {"reason"}
    assert timer.phases_s["reason"] == pytest.approx(0.04)


def test_a_phase_that_raises_still_counts_its_time(clock: ManualClock) -> None:
    """A failing answer call still shows where the time went."""
    timer = PhaseTimer()
    with pytest.raises(RuntimeError), timer.phase(QueryPhase.ANSWER):
        clock.advance(0.005)
        raise RuntimeError("provider down")
    assert timer.phases_s["answer"] == pytest.approx(0.005)


def test_sub_search_phases_merge_into_the_query() -> None:
    """A retrieval step's phases add to the query's own, in first-seen order."""
    timer = PhaseTimer()
    timer.add(QueryPhase.EMBED, 0.5)
    timer.add_all({"embed": 0.25, "dense_search": 1.0})
    assert timer.phases_s == {"embed": 0.75, "dense_search": 1.0}


def test_the_vocabulary_holds_the_phases_the_issue_names() -> None:
    """Embed, search (dense and keyword), fusion, judge and answer are all phases."""
    assert {"embed", "dense_search", "keyword_search", "fusion", "judge", "answer"} <= PHASES


def test_a_model_load_inside_a_phase_is_not_the_phases_time(
        clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedder's first use loads its model inside the embed phase: the phase keeps
    only its own time, and the load is the query's embedder_load_s."""
    from hopindex.backends.embedder import loading

    monkeypatch.setattr(loading, "time", SimpleNamespace(perf_counter=clock))
    timer = PhaseTimer()
    with loading.timed_loads() as loads, timer.phase(QueryPhase.EMBED):
        with loading.loading():
            clock.advance(4.8)
        clock.advance(0.02)
    assert timer.phases_s["embed"] == pytest.approx(0.02)
    assert loads.read() == pytest.approx(4.8)
