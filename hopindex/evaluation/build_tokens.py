"""The tokens it took to build the index each row of a run queried: the start of that
row's cumulative-token curve (``token_curve``).

An index built or reused in the run has its build cost (``build_cost``): its tokens are
that build's (the run's ingest, or the sum over a reused index's finished jobs).
Otherwise (a run that records no build, or a reused index no job on record built) they
are summed from the index's own job records, every finished job's LLM usage. Tokens
are prompt + completion tokens the provider answered for; calls the response cache
served cost none.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hopindex.core.models import Job

# An index's jobs newest first, at most ``limit`` of them (Hopindex.list_jobs).
ListJobs = Callable[[str, int], Sequence["Job"]]
# How many of an index's jobs are summed: far more than an evaluated index has.
JOBS_READ = 10_000


class BuildTokensSource(enum.StrEnum):
    """Where a row's build tokens come from."""

    BUILD = "build"  # the run's build cost of the index (report.builds)
    JOBS = "jobs"  # the sum over the index's finished jobs on record


@dataclass(frozen=True, slots=True)
class BuildTokens:
    """Prompt + completion tokens spent building ``index``; ``jobs`` the number of job
    records they were summed from (the run's build: its one job, or the reused index's
    jobs it summed)."""

    index: str
    tokens: int
    source: BuildTokensSource
    jobs: int = 0

    @property
    def note(self) -> str:
        return (f"build tokens of {self.index}: {self.tokens:,}, summed from the records "
                f"of its {self.jobs} finished job{'' if self.jobs == 1 else 's'}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BuildTokens:
        return cls(index=data["index"], tokens=data["tokens"],
                   source=BuildTokensSource(data["source"]), jobs=data["jobs"])


def tokens_from_jobs(index: str, jobs: Iterable[Job]) -> BuildTokens:
    """Prompt + completion tokens over the finished jobs, every phase; a failed or
    cancelled job's calls were paid for all the same."""
    finished = [job for job in jobs if job.state.is_final]
    tokens = sum(usage.prompt_tokens + usage.completion_tokens
                 for job in finished for usage in job.llm.values())
    return BuildTokens(index=index, tokens=tokens, source=BuildTokensSource.JOBS,
                       jobs=len(finished))
