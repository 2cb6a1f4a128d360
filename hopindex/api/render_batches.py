"""How a job in batch mode shows its provider batches (``hopindex jobs JOB_ID``, the job
list, the progress display): the job's LLM mode, one line for the wait on the
provider, and one per batch, from ``ProviderBatch.view`` alone, so a job read from a
server shows the same lines as one read here."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from hopindex.core.models import Job, JobState
from hopindex.core.provider_batches import ProviderBatch
from hopindex.core.settings import LlmMode


def lines_done(batches: Sequence[ProviderBatch]) -> tuple[int, int, int]:
    """Lines the provider finished (answered or failed), lines in all, lines failed."""
    views = [b.view() for b in batches]
    total = sum(int(v["total"]) for v in views)
    failed = sum(int(v["failed"]) for v in views)
    return sum(int(v["completed"]) for v in views) + failed, total, failed


def batches_summary(job: Job) -> str:
    """``2 batches, 310/400 lines done`` (and how many failed, when some did)."""
    done, total, failed = lines_done(job.provider_batches)
    count = len(job.provider_batches)
    failures = f", {failed:,} failed" if failed else ""
    return (f"{count} batch{'es' if count != 1 else ''}, {done:,}/{total:,} lines "
            f"done{failures}")


def waiting_line(job: Job) -> str | None:
    """What a job waiting on the provider is waiting for; None for any other job."""
    if job.state is not JobState.WAITING_ON_PROVIDER:
        return None
    return f"waiting on the provider: {batches_summary(job)}"


def batch_lines(job: Job) -> list[str]:
    """The job's LLM mode (shown for a job in batch mode, or one that called an LLM),
    the wait on the provider, and each of its batches."""
    if job.llm_mode is LlmMode.SYNC and not job.llm and not job.provider_batches:
        return []
    lines = [f"LLM mode: {job.llm_mode.value}"]
    if (waiting := waiting_line(job)) is not None:
        lines.append(waiting)
    for batch in job.provider_batches:
        view = batch.view()
        failed = f", {view['failed']:,} failed" if view["failed"] else ""
        error = f": {view['error']}" if view["error"] else ""
        lines.append(f"  batch {view['batch_id'] or '(not sent yet)'} {view['phase']}: "
                     f"{view['state']}, {view['completed']:,}/{view['total']:,} lines "
                     f"answered{failed}{error}")
    return lines


def render_batches(console: Console, job: Job) -> None:
    """``batch_lines``, unwrapped: a batch id broken at the console's width cannot be
    copied."""
    for line in batch_lines(job):
        console.print(line, markup=False, soft_wrap=True)
