"""Build tokens per row: the run's build of the index the row queried when there is one,
else the sum over that index's finished job records, read once per index."""

from __future__ import annotations

from collections.abc import Sequence

from hopindex.core.models import Job, JobKind, JobState, LlmUsage
from hopindex.evaluation.build_cost import BuildCost, BuildSource, PhaseCost
from hopindex.evaluation.build_tokens import (
    BuildTokens,
    BuildTokensSource,
    tokens_from_jobs,
)
from hopindex.evaluation.report import EvalReport, MethodReport
from hopindex.evaluation.report_tokens import assign_build_tokens


def job(job_id: str, state: JobState, *usage: tuple[str, int, int],
        kind: JobKind = JobKind.INGEST) -> Job:
    record = Job(job_id=job_id, index="idx", kind=kind, state=state)
    for phase, prompt, completion in usage:
        record.llm[phase] = LlmUsage(calls=1, prompt_tokens=prompt,
                                     completion_tokens=completion)
    return record


JOBS = [
    job("j1", JobState.SUCCEEDED, ("compactrag.qa", 9_000, 1_000),
        ("compactrag.atoms", 400, 100)),
    # A later ingest of new documents, some of whose items failed: paid for all the same.
    job("j2", JobState.SUCCEEDED_WITH_ERRORS, ("compactrag.qa", 900, 100)),
    # Failed and cancelled jobs spent their tokens too.
    job("j3", JobState.FAILED, ("compactrag.qa", 50, 0)),
    job("j4", JobState.CANCELLED, ("compactrag.qa", 0, 5)),
    job("j5", JobState.SUCCEEDED, ("compactrag.levels", 70, 30), kind=JobKind.REBUILD),
    # Still running: its usage is not final and is left out.
    job("j6", JobState.RUNNING, ("compactrag.qa", 100_000, 100_000)),
]


class FakeJobs:
    """Hopindex.list_jobs over fixed records, counting the reads."""

    def __init__(self, jobs: dict[str, list[Job]]) -> None:
        self.jobs = jobs
        self.reads: list[tuple[str, int]] = []

    def __call__(self, index: str, limit: int) -> Sequence[Job]:
        self.reads.append((index, limit))
        return self.jobs.get(index, [])[:limit]


def test_tokens_from_jobs_sum_prompt_and_completion_over_finished_jobs() -> None:
    """Every phase of every finished job counts, whatever its kind or outcome; a running
    job does not: 10,000 + 500 + 1,000 + 50 + 5 + 100 tokens over 5 jobs."""
    tokens = tokens_from_jobs("idx", JOBS)
    assert tokens == BuildTokens(index="idx", tokens=11_655, source=BuildTokensSource.JOBS,
                                 jobs=5)
    assert tokens.note == ("build tokens of idx: 11,655, summed from the records of its 5 "
                           "finished jobs")
    assert tokens_from_jobs("idx", []).tokens == 0


def row(method: str, index_method: str = "") -> MethodReport:
    return MethodReport(method=method, n_questions=2, recall={5: 1.0}, latency_p50_ms=1.0,
                        latency_p95_ms=1.0, index_method=index_method)


def build(index_method: str, source: BuildSource, *, prompt: int = 0,
          completion: int = 0) -> BuildCost:
    return BuildCost(index_method=index_method, index=f"hq-{index_method}", source=source,
                     documents=20, job_id=None if source is BuildSource.REUSED_UNRECORDED
                     else f"job-{index_method}",
                     phases=[PhaseCost(phase=f"{index_method}.stage1", llm_calls=3,
                                       prompt_tokens=prompt, completion_tokens=completion),
                             PhaseCost(phase=f"{index_method}.stage2", llm_calls=1,
                                       prompt_tokens=prompt, completion_tokens=0)])


def test_rows_take_the_runs_build_and_else_the_index_job_records() -> None:
    """A row on an index built or reused in the run takes that build's total tokens
    (prompt + completion, every phase) without reading any job; rows on a reused index no
    job on record built are summed from that index's job records, read once for both."""
    report = EvalReport(
        dataset="d", index="hq", created_at="now", ks=(5,),
        methods=[row("compactrag", "compactrag"), row("naive", "extractive"),
                 row("ircot", "indexrag"), row("indexrag", "indexrag")],
        builds=[build("compactrag", BuildSource.BUILT, prompt=600, completion=150),
                build("extractive", BuildSource.REUSED),
                build("indexrag", BuildSource.REUSED_UNRECORDED)])
    jobs = FakeJobs({"hq-indexrag": JOBS})
    assign_build_tokens(report, jobs)
    compact, naive, ircot, indexrag = (m.build_tokens for m in report.methods)
    assert compact == BuildTokens(index="hq-compactrag", tokens=1_350,
                                  source=BuildTokensSource.BUILD, jobs=1)
    assert naive == BuildTokens(index="hq-extractive", tokens=0,
                                source=BuildTokensSource.BUILD, jobs=1)
    assert ircot == indexrag == BuildTokens(index="hq-indexrag", tokens=11_655,
                                            source=BuildTokensSource.JOBS, jobs=5)
    assert [index for index, _ in jobs.reads] == ["hq-indexrag"]


def test_a_run_without_builds_reads_the_one_index_it_queried() -> None:
    """runner.evaluate records no build and no index method: every row queried the run's
    index, whose job records give the tokens; an index with no records costs 0."""
    report = EvalReport(dataset="d", index="hq", created_at="now", ks=(5,),
                        methods=[row("naive"), row("compactrag")])
    jobs = FakeJobs({"hq": JOBS})
    assign_build_tokens(report, jobs)
    assert [m.build_tokens.tokens if m.build_tokens else None
            for m in report.methods] == [11_655, 11_655]
    assert len(jobs.reads) == 1 and jobs.reads[0][0] == "hq"

    empty = EvalReport(dataset="d", index="new", created_at="now", ks=(5,),
                       methods=[row("naive")])
    assign_build_tokens(empty, FakeJobs({}))
    assert empty.methods[0].build_tokens == BuildTokens(
        index="new", tokens=0, source=BuildTokensSource.JOBS, jobs=0)
