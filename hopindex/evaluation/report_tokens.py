"""Each row's build tokens, set on a finished report (see ``build_tokens``)."""

from __future__ import annotations

from hopindex.evaluation.build_cost import BuildSource
from hopindex.evaluation.build_tokens import (
    JOBS_READ,
    BuildTokens,
    BuildTokensSource,
    ListJobs,
    tokens_from_jobs,
)
from hopindex.evaluation.report import EvalReport


def assign_build_tokens(report: EvalReport, list_jobs: ListJobs) -> None:
    """Set each row's ``build_tokens``: its index's build in the run when one is on
    record, else the sum over the index's job records (read once per index)."""
    builds = {build.index_method: build for build in report.builds}
    from_jobs: dict[str, BuildTokens] = {}
    for row in report.methods:
        build = builds.get(row.index_method)
        if build is not None and build.source is not BuildSource.REUSED_UNRECORDED:
            total = build.total()
            row.build_tokens = BuildTokens(
                index=build.index, tokens=total.prompt_tokens + total.completion_tokens,
                source=BuildTokensSource.BUILD,
                jobs=build.jobs_summed or (1 if build.job_id else 0))
            continue
        # A row of a run without builds (runner.evaluate) queried the run's one index.
        index = build.index if build is not None else report.index
        if index not in from_jobs:
            from_jobs[index] = tokens_from_jobs(index, list_jobs(index, JOBS_READ))
        row.build_tokens = from_jobs[index]
