"""What building an index cost: the jobs' wall time and, per phase of its index method,
their counts and LLM usage (calls, prompt and completion tokens, cache hits).

An index built by the run costs its one ingest job. An index reused as it is was built
by every job on its record, not only the last: a first ingest, later ingests of changed
documents, deletes, repairs, rebuilds. Its cost is their sum, and says how many jobs of
each kind it summed.

Beside the tokens, the ingestion multiplier: each phase's prompt, completion and total
LLM tokens per token of the corpus the summed jobs read (core/token_multiplier.py).

Pure: built from job records and the phase names, so a report can be checked on
hand-built jobs. The job record is imported for type checking only; the CLI imports
this module on every start.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hopindex.core.token_multiplier import (
    TokenMultiplier,
    multiplier_text,
    token_multiplier,
)

if TYPE_CHECKING:
    from hopindex.core.models import Job


class BuildSource(enum.StrEnum):
    """Where a build's figures come from."""

    BUILT = "built"  # this run ingested the corpus: the figures are that job's
    REUSED = "reused"  # the index existed: the figures are the sum over its finished jobs
    # The index existed and no finished job of it is on record (imported, or its jobs
    # pruned): the figures are zeros, not a measurement.
    REUSED_UNRECORDED = "reused-unrecorded"


@dataclass
class PhaseCost:
    """One phase of a build (``indexrag.stage1``): the job's item counts and LLM usage."""

    phase: str
    kind: str = ""
    done: int = 0
    skipped: int = 0
    failed: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0

    def add(self, other: PhaseCost) -> None:
        self.done += other.done
        self.skipped += other.skipped
        self.failed += other.failed
        self.llm_calls += other.llm_calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cache_hits += other.cache_hits

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PhaseCost:
        return cls(phase=data["phase"], kind=data.get("kind", ""), done=data["done"],
                   skipped=data["skipped"], failed=data["failed"],
                   llm_calls=data["llm_calls"], prompt_tokens=data["prompt_tokens"],
                   completion_tokens=data["completion_tokens"], cache_hits=data["cache_hits"])


@dataclass
class BuildCost:
    """One index of an evaluation run and what building it cost."""

    index_method: str
    index: str
    source: BuildSource
    documents: int  # in the index when it was evaluated
    wall_s: float = 0.0
    # The job built by the run, or the newest of those summed.
    job_id: str | None = None
    job_state: str | None = None
    phases: list[PhaseCost] = field(default_factory=list)
    # How many jobs of each kind (ingest, delete, repair, rebuild) the figures sum;
    # empty in reports written before builds were summed.
    jobs: dict[str, int] = field(default_factory=dict)
    # Tokens of the documents the summed jobs read (``Job.corpus_tokens``); None when
    # any of them did not count its own (a method without an LLM, a job or a report from
    # before they were counted): a sum missing some would inflate the multiplier.
    corpus_tokens: int | None = None

    def total(self) -> PhaseCost:
        total = PhaseCost(phase="total")
        for phase in self.phases:
            total.add(phase)
        return total

    def phase(self, name: str) -> PhaseCost | None:
        return next((p for p in self.phases if p.phase == name), None)

    def multiplier(self, phase: PhaseCost) -> TokenMultiplier | None:
        """``phase``'s (or the total's) LLM tokens per corpus token; None unknown."""
        return token_multiplier(phase, self.corpus_tokens)

    @property
    def jobs_summed(self) -> int:
        return sum(self.jobs.values())

    @property
    def described(self) -> str:
        """The source in words: the job whose figures these are, or the jobs summed."""
        if self.source is BuildSource.BUILT:
            return f"built by job {self.job_id}"
        if self.source is BuildSource.REUSED:
            if not self.jobs:  # a report from before builds were summed
                return f"reused; cost of job {self.job_id}"
            kinds = ", ".join(f"{count} {kind}" for kind, count in self.jobs.items())
            plural = "" if self.jobs_summed == 1 else "s"
            return f"reused; sum of {self.jobs_summed} job{plural} ({kinds})"
        return "reused; no job on record, cost 0"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BuildCost:
        return cls(index_method=data["index_method"], index=data["index"],
                   source=BuildSource(data["source"]), documents=data["documents"],
                   wall_s=data["wall_s"], job_id=data.get("job_id"),
                   job_state=data.get("job_state"),
                   phases=[PhaseCost.from_dict(p) for p in data.get("phases", [])],
                   jobs={str(k): int(v) for k, v in data.get("jobs", {}).items()},
                   corpus_tokens=data.get("corpus_tokens"))


# The kinds of job that read documents and count them (scheduler/corpus.py); a delete
# reads none, though the groups it rebuilds may call the LLM.
_READING_KINDS = frozenset({"ingest", "repair", "rebuild"})


def _corpus_of(jobs: Sequence[Job]) -> int | None:
    counted = [job.corpus_tokens for job in jobs if job.kind.value in _READING_KINDS]
    if not counted or any(tokens is None for tokens in counted):
        return None
    return sum(tokens for tokens in counted if tokens is not None)


def _phase_of(job: Job, name: str, kind: str) -> PhaseCost:
    phase = PhaseCost(phase=name, kind=kind or job.phases.get(name, ""))
    if (counts := job.counts.get(name)) is not None:
        phase.done, phase.skipped, phase.failed = counts.done, counts.skipped, counts.failed
    if (usage := job.llm.get(name)) is not None:
        phase.llm_calls, phase.cache_hits = usage.calls, usage.cache_hits
        phase.prompt_tokens = usage.prompt_tokens
        phase.completion_tokens = usage.completion_tokens
    return phase


def build_cost(index_method: str, index: str, *, source: BuildSource, documents: int,
               jobs: Sequence[Job], phases: Sequence[tuple[str, str]]) -> BuildCost:
    """The cost of ``jobs`` (oldest first; none: zeros) summed per phase, ``phases``
    being the index method's (qualified name, kind) in order; LLM usage a job recorded
    under another name follows them, so no call goes uncounted. A failed or cancelled
    job counts too: its calls were paid for."""
    cost = BuildCost(index_method=index_method, index=index, source=source,
                     documents=documents)
    kinds = dict(phases)
    names = list(dict.fromkeys([*kinds, *(name for job in jobs for name in job.llm)]))
    summed = {name: PhaseCost(phase=name, kind=kinds.get(name, "")) for name in names}
    for job in jobs:
        cost.jobs[job.kind.value] = cost.jobs.get(job.kind.value, 0) + 1
        if job.finished_at is not None and job.started_at is not None:
            cost.wall_s += job.finished_at - job.started_at
        for name, phase in summed.items():
            if not phase.kind:
                phase.kind = job.phases.get(name, "")
            phase.add(_phase_of(job, name, phase.kind))
    if jobs:
        cost.job_id, cost.job_state = jobs[-1].job_id, jobs[-1].state.value
    cost.phases = list(summed.values())
    cost.corpus_tokens = _corpus_of(jobs)
    return cost


# The last three: the multiplier, LLM tokens per corpus token (``corpus tok``).
BUILD_HEADER = ("index method", "index", "build", "docs", "corpus tok", "wall s", "phase",
                "done", "skipped", "failed", "LLM calls", "prompt tok", "compl tok",
                "cache hits", "prompt/corpus", "compl/corpus", "total/corpus")


def _phase_cells(build: BuildCost, phase: PhaseCost) -> list[str]:
    multiplier = build.multiplier(phase)
    figures = ([multiplier.prompt, multiplier.completion, multiplier.total]
               if multiplier is not None else [])
    return [phase.phase, str(phase.done), str(phase.skipped), str(phase.failed),
            str(phase.llm_calls), str(phase.prompt_tokens), str(phase.completion_tokens),
            str(phase.cache_hits), *([multiplier_text(f) for f in figures] or ["-"] * 3)]


def build_rows(builds: Sequence[BuildCost]) -> list[list[str]]:
    """Each build's phases, then its total; the build's own cells on its first row only."""
    rows: list[list[str]] = []
    for build in builds:
        corpus = "-" if build.corpus_tokens is None else str(build.corpus_tokens)
        first = [build.index_method, build.index, build.described, str(build.documents),
                 corpus, f"{build.wall_s:.2f}"]
        blank = [""] * len(first)
        for n, phase in enumerate(build.phases):
            rows.append([*(first if n == 0 else blank), *_phase_cells(build, phase)])
        # Items of different phases (documents, bridge entities) do not add up.
        total = _phase_cells(build, build.total())
        total[1:4] = [""] * 3
        rows.append([*(blank if build.phases else first), *total])
    return rows
