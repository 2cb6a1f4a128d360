"""Build cost: job records' counts and LLM usage per phase, in the index method's order,
summed over every job that built a reused index."""

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
    cost = build_cost("m", "x-m", source=BuildSource.BUILT, documents=5, jobs=[finished_job()],
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
    cost = build_cost("m", "x-m", source=BuildSource.REUSED_UNRECORDED, documents=3, jobs=[],
                      phases=PHASES)
    assert [p.phase for p in cost.phases] == ["m.stage1", "m.stage2"]
    assert cost.total() == PhaseCost(phase="total")
    assert cost.job_id is None and cost.wall_s == 0.0
    assert cost.described == "reused; no job on record, cost 0"


def test_rows_name_the_build_once_and_total_only_llm_figures() -> None:
    """The build's own cells are on its first row; the total row leaves the item counts
    blank (documents and groups do not add up) and sums the LLM figures."""
    cost = build_cost("m", "x-m", source=BuildSource.REUSED, documents=5, jobs=[finished_job()],
                      phases=PHASES)
    rows = build_rows([cost])
    assert all(len(row) == len(BUILD_HEADER) for row in rows)
    assert rows[0][:7] == ["m", "x-m", "reused; sum of 1 job (1 ingest)", "5", "-", "3.50",
                           "m.stage1"]
    assert rows[1][:6] == [""] * 6
    assert rows[-1][6:] == ["total", "", "", "", "11", "540", "58", "1", "-", "-", "-"]


def test_a_reused_index_costs_every_job_that_built_it() -> None:
    """An index built by an ingest, a later ingest of changed documents and a repair
    (which failed, its calls paid all the same): each phase sums the three jobs' counts
    and LLM usage, the wall time is theirs together, and the build says it summed 3
    jobs, of which kind, naming the newest."""
    later = finished_job()
    later.job_id, later.started_at, later.finished_at = "j2", 200.0, 201.0
    later.llm = {"m.stage1": LlmUsage(calls=1, prompt_tokens=100, completion_tokens=10)}
    repair = Job(job_id="j3", index="x-m", kind=JobKind.REPAIR, state=JobState.FAILED,
                 started_at=300.0, finished_at=300.5)
    repair.counts["m.stage2"] = StageCounts(total=2, done=1, failed=1)
    repair.llm["m.stage2"] = LlmUsage(calls=2, prompt_tokens=30, completion_tokens=6)
    cost = build_cost("m", "x-m", source=BuildSource.REUSED, documents=5,
                      jobs=[finished_job(), later, repair], phases=PHASES)
    stage1, stage2 = cost.phase("m.stage1"), cost.phase("m.stage2")
    assert stage1 is not None and stage2 is not None
    assert (stage1.done, stage1.failed, stage1.llm_calls) == (10, 2, 6)
    assert (stage1.prompt_tokens, stage1.completion_tokens) == (600, 60)
    assert (stage2.done, stage2.failed, stage2.llm_calls) == (9, 1, 6)
    assert cost.total().prompt_tokens + cost.total().completion_tokens == 598 + 110 + 36
    assert cost.wall_s == 3.5 + 1.0 + 0.5
    assert cost.jobs == {"ingest": 2, "repair": 1} and cost.jobs_summed == 3
    assert (cost.job_id, cost.job_state) == ("j3", "failed")
    assert cost.described == "reused; sum of 3 jobs (2 ingest, 1 repair)"


def test_a_report_from_before_builds_were_summed_reads_as_it_did() -> None:
    """A reused build read from a report without job counts names its one job."""
    data = asdict(build_cost("m", "x-m", source=BuildSource.REUSED, documents=5,
                             jobs=[finished_job()], phases=PHASES))
    del data["jobs"]
    assert BuildCost.from_dict(data).described == "reused; cost of job j1"


def test_build_cost_round_trips_through_a_dict() -> None:
    """from_dict reads back what asdict wrote, the source as its enum."""
    cost = build_cost("m", "x-m", source=BuildSource.BUILT, documents=5, jobs=[finished_job()],
                      phases=PHASES)
    assert BuildCost.from_dict(asdict(cost)) == cost


def test_the_multiplier_divides_each_phase_by_the_corpus_the_jobs_read() -> None:
    """Two ingests that read 400 and 150 corpus tokens and a delete (which reads none and
    counts none): the build's corpus is 550, and each phase's row (and the total's) ends
    with its prompt, completion and total tokens per corpus token."""
    first, later = finished_job(), finished_job()
    first.corpus_tokens, later.corpus_tokens = 400, 150
    later.job_id = "j2"
    delete = Job(job_id="j3", index="x-m", kind=JobKind.DELETE, state=JobState.SUCCEEDED)
    delete.llm["m.stage2"] = LlmUsage(calls=1, prompt_tokens=20, completion_tokens=2)
    cost = build_cost("m", "x-m", source=BuildSource.REUSED, documents=5,
                      jobs=[first, later, delete], phases=PHASES)
    assert cost.corpus_tokens == 550
    stage1 = cost.phase("m.stage1")
    assert stage1 is not None and cost.multiplier(stage1) is not None
    rows = build_rows([cost])
    assert rows[0][4] == "550"
    assert rows[0][-3:] == ["1.82x", "0.18x", "2.00x"]  # 1,000 and 100 over 550
    assert rows[-1][-3:] == ["2.00x", "0.21x", "2.21x"]  # 1,100 and 118 over 550
    assert BuildCost.from_dict(asdict(cost)) == cost


def test_a_job_that_did_not_count_its_corpus_leaves_the_multiplier_unknown() -> None:
    """One ingest from before corpus tokens were counted among the summed jobs: the
    corpus is unknown, not the other jobs' alone (which would inflate the ratio), and
    the multiplier cells say so with "-"; a report written before reads the same."""
    counted, uncounted = finished_job(), finished_job()
    counted.corpus_tokens = 500
    cost = build_cost("m", "x-m", source=BuildSource.REUSED, documents=5,
                      jobs=[uncounted, counted], phases=PHASES)
    assert cost.corpus_tokens is None
    assert cost.multiplier(cost.total()) is None
    assert all(row[-3:] == ["-", "-", "-"] for row in build_rows([cost]))
    data = asdict(cost)
    del data["corpus_tokens"]
    assert BuildCost.from_dict(data).corpus_tokens is None
