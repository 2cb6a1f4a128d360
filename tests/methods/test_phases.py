"""The query phase timer: one vocabulary, repeats summed, sub-searches merged."""

from __future__ import annotations

import time

import pytest

from hopindex.methods.phases import PHASES, PhaseTimer, QueryPhase


def test_a_phase_run_twice_sums_its_runs() -> None:
    """IRCoT reasons several times per query: the phase reports their total."""
    timer = PhaseTimer()
    for _ in range(2):
        with timer.phase(QueryPhase.REASON):
            time.sleep(0.01)
    assert set(timer.phases_s) == {"reason"}
    assert timer.phases_s["reason"] >= 0.02


def test_a_phase_that_raises_still_counts_its_time() -> None:
    """A failing answer call still shows where the time went."""
    timer = PhaseTimer()
    with pytest.raises(RuntimeError), timer.phase(QueryPhase.ANSWER):
        time.sleep(0.005)
        raise RuntimeError("provider down")
    assert timer.phases_s["answer"] >= 0.005


def test_sub_search_phases_merge_into_the_query() -> None:
    """A retrieval step's phases add to the query's own, in first-seen order."""
    timer = PhaseTimer()
    timer.add(QueryPhase.EMBED, 0.5)
    timer.add_all({"embed": 0.25, "dense_search": 1.0})
    assert timer.phases_s == {"embed": 0.75, "dense_search": 1.0}


def test_the_vocabulary_holds_the_phases_the_issue_names() -> None:
    """Embed, search (dense and keyword), fusion, judge and answer are all phases."""
    assert {"embed", "dense_search", "keyword_search", "fusion", "judge", "answer"} <= PHASES
