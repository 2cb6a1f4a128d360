"""Job-record bookkeeping shared by every task: counts per stage and per-item errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hopindex.backends.protocols import JobStore
from hopindex.core.models import ItemError, Job, JobState, LlmUsage, Stage


def record_progress(jobs: JobStore, job_id: str, stage: Stage, *, total: int = 0, done: int = 0,
                    failed: int = 0, skipped: int = 0,
                    errors: Sequence[ItemError] = (),
                    llm_usage: Mapping[str, LlmUsage] | None = None) -> Job:
    def change(job: Job) -> None:
        counts = job.counts[stage]
        counts.total += total
        counts.done += done
        counts.failed += failed
        counts.skipped += skipped
        job.errors.extend(errors)
        if llm_usage:
            job.add_llm_usage(dict(llm_usage))

    return jobs.update_job(job_id, change)


def is_cancelled(jobs: JobStore, job_id: str) -> bool:
    job = jobs.get_job(job_id)
    return job is None or job.state is JobState.CANCELLED


def batched(items: Sequence[str], size: int) -> list[list[str]]:
    return [list(items[i:i + size]) for i in range(0, len(items), size)]
