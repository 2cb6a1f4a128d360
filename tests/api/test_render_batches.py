"""How a job in batch mode reads: its LLM mode, the wait on the provider with its
lines done, one line per provider batch, in ``hopindex jobs JOB_ID``, the job list and
the progress display;
a command that waited for a job still waiting ends "try again later" (75), saying how
to follow it."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.progress import Progress

from hopindex.api import cli_support
from hopindex.api.cli_support import job_failure, print_jobs
from hopindex.api.exit_codes import ExitCode, job_outcome
from hopindex.api.progress import PROVIDER_BAR
from hopindex.api.progress import _stage_updater as progress_bars
from hopindex.api.render import render_job
from hopindex.core.models import Job, JobState, LlmUsage
from hopindex.core.provider_batches import BatchState, ProviderBatch
from hopindex.core.settings import LlmMode
from hopindex.testing.contracts.state_records import new_job


def _waiting() -> Job:
    job = new_job("wiki")
    job.state = JobState.WAITING_ON_PROVIDER
    job.llm_mode = LlmMode.BATCH
    job.provider_batches = [
        ProviderBatch(token="t1", phase="indexrag.stage1", keys=[f"k{n}" for n in range(300)],
                      batch_id="batch_abc", state=BatchState.IN_PROGRESS, total=300,
                      completed=200, failed=10),
        ProviderBatch(token="t2", phase="indexrag.stage1", keys=[f"j{n}" for n in range(100)],
                      batch_id="batch_def", state=BatchState.COMPLETED, total=100,
                      completed=100, settled=True),
    ]
    return job


def _shown(job: Job) -> str:
    out = io.StringIO()
    render_job(Console(file=out, width=200), job)
    return out.getvalue()


def test_a_waiting_job_shows_its_mode_its_wait_and_each_batch() -> None:
    """``jobs JOB_ID``: the mode, "waiting on the provider: 2 batches, 310/400 lines done,
    10 failed", and per batch its id, phase, state and lines; never a request key."""
    shown = _shown(_waiting())
    assert "LLM mode: batch" in shown
    assert "waiting on the provider: 2 batches, 310/400 lines done, 10 failed" in shown
    assert ("batch batch_abc indexrag.stage1: in_progress, 200/300 lines answered, "
            "10 failed") in shown
    assert "batch batch_def indexrag.stage1: completed, 100/100 lines answered" in shown
    assert "k1" not in shown.replace("batch_abc", "")


def test_a_sync_job_says_its_mode_only_when_it_called_an_llm() -> None:
    """A job in sync mode that made no LLM call (a delete, an extractive ingest) says
    nothing of modes; one that called an LLM says sync, and no wait."""
    quiet = new_job("wiki")
    assert "LLM mode" not in _shown(quiet)
    called = new_job("wiki")
    called.llm = {"indexrag.stage1": LlmUsage(calls=2)}
    shown = _shown(called)
    assert "LLM mode: sync" in shown and "waiting on the provider" not in shown


def test_the_job_list_says_what_a_waiting_job_waits_for(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``hopindex jobs``: the waiting job's line names its state and its wait."""
    out = io.StringIO()
    monkeypatch.setattr(cli_support, "console", Console(file=out, width=300))
    job = _waiting()
    print_jobs([job], as_json=False)
    line = out.getvalue()
    assert job.job_id in line and "waiting_on_provider" in line
    assert "waiting on the provider: 2 batches, 310/400 lines done" in line


def test_a_command_that_waited_for_a_waiting_job_tries_again_later() -> None:
    """Not finished, nothing to fix: exit 75 with a code of its own, and the message
    says the job goes on by itself and how to follow it."""
    job = _waiting()
    outcome = job_outcome(job)
    assert (outcome.exit_code, outcome.code) == (ExitCode.TEMPORARY,
                                                 "job_waiting_on_provider")
    message = job_failure(job, outcome)
    assert message.startswith(f"job {job.job_id} is waiting on the provider: 2 batches")
    assert f"hopindex jobs {job.job_id} --follow" in message


def test_the_progress_display_follows_the_lines_at_the_provider() -> None:
    """While a job waits on the provider no phase bar moves: a bar of its batches' lines
    (done of all) says how far the provider is."""
    progress = Progress(console=Console(file=io.StringIO()))
    show = progress_bars(progress)
    job = _waiting()
    show(job)
    bar = next(task for task in progress.tasks if task.description == PROVIDER_BAR)
    assert (bar.completed, bar.total) == (310, 400)
    job.provider_batches[0].completed = 290
    show(job)
    assert (bar.completed, bar.total) == (400, 400)
