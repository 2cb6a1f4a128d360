"""Build cost: a job record's counts and LLM usage per phase, in the index method's order."""

from __future__ import annotations

from dataclasses import asdict

from hopindex.core.models import Job, JobKind, JobState, LlmUsage, StageCounts
from hopindex.evaluation.build_cost import (
    BUILD_HEADER,
    BuildCost,
    BuildSource,
    PhaseCost,
    build_cost,
    build_rows,
)

PHASES = [("m.stage1", "documents"), ("m.stage2", "groups")]


def finished_job() -> Job:
    job = Job(job_id="j1", index="x-m", kind=JobKind.INGEST, state=JobState.SUCCEEDED,
              started_at=100.0, finished_at=103.5)
    job.counts["m.stage2"] = StageCounts(total=9, done=4, skipped=5)
    job.counts["m.stage1"] = StageCounts(total=6, done=5, failed=1)
    job.llm["m.stage1"] = LlmUsage(calls=5, cache_hits=1, prompt_tokens=500,
                                   completion_tokens=50)
    job.llm["m.stage2"] = LlmUsage(calls=4, prompt_tokens=40, completion_tokens=8)
    job.llm["m.extra"] = LlmUsage(calls=2)
    return job


def test_each_phase_carries_its_counts_and_llm_usage_in_method_order() -> None:
    """Phases follow the index method's order, not the job's; usage recorded under a name
    the method does not list follows them, so the total counts every call."""
    cost = build_cost("m", "x-m", source=BuildSource.BUILT, documents=5, job=finished_job(),
                      phases=PHASES)
    assert [(p.phase, p.kind) for p in cost.phases] == [
        ("m.stage1", "documents"), ("m.stage2", "groups"), ("m.extra", "")]
    assert cost.phases[0] == PhaseCost(phase="m.stage1", kind="documents", done=5, failed=1,
                                       llm_calls=5, cache_hits=1, prompt_tokens=500,
                                       completion_tokens=50)
    assert (cost.phases[1].done, cost.phases[1].skipped, cost.phases[1].llm_calls) == (4, 5, 4)
    assert cost.total().llm_calls == 11
    assert (cost.job_id, cost.job_state, cost.wall_s) == ("j1", "succeeded", 3.5)


def test_no_job_is_zeros_over_every_phase() -> None:
    """A reused index with no job on record shows every phase at zero, not no phases."""
    cost = build_cost("m", "x-m", source=BuildSource.REUSED_UNRECORDED, documents=3, job=None,
                      phases=PHASES)
    assert [p.phase for p in cost.phases] == ["m.stage1", "m.stage2"]
    assert cost.total() == PhaseCost(phase="total")
    assert cost.job_id is None and cost.wall_s == 0.0
    assert cost.described == "reused; no job on record, cost 0"


def test_rows_name_the_build_once_and_total_only_llm_figures() -> None:
    """The build's own cells are on its first row; the total row leaves the item counts
    blank (documents and groups do not add up) and sums the LLM figures."""
    cost = build_cost("m", "x-m", source=BuildSource.REUSED, documents=5, job=finished_job(),
                      phases=PHASES)
    rows = build_rows([cost])
    assert all(len(row) == len(BUILD_HEADER) for row in rows)
    assert rows[0][:6] == ["m", "x-m", "reused; cost of job j1", "5", "3.50", "m.stage1"]
    assert rows[1][:5] == [""] * 5
    assert rows[-1][5:] == ["total", "", "", "", "11", "540", "58", "1"]


def test_build_cost_round_trips_through_a_dict() -> None:
    """from_dict reads back what asdict wrote, the source as its enum."""
    cost = build_cost("m", "x-m", source=BuildSource.BUILT, documents=5, job=finished_job(),
                      phases=PHASES)
    assert BuildCost.from_dict(asdict(cost)) == cost
