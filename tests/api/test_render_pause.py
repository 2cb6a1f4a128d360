"""What the CLI suggests and shows for a job paused on its LLM budget: the limits in
the resume command (twice the one that refused, more when the figures, or what was
spent plus what the dry run estimated for the rest, say so, rounded up to two
significant digits, only the kinds that refused),
costs written as people type them, and a follower told once per pause and once per
resume."""

from __future__ import annotations

from hopindex.api.progress import PauseWatch
from hopindex.api.render_pause import pause_lines, resume_command, suggested_limits
from hopindex.core.budget import BudgetLimits
from hopindex.core.models import Job, JobState, LlmUsage
from hopindex.testing.contracts.state_records import new_job


def _paused(limits: BudgetLimits, spent: tuple[int, float], next_call: tuple[int, float],
            estimate: dict[str, dict[str, object]] | None = None) -> Job:
    job = new_job("curie")
    job.state = JobState.PAUSED
    job.budget = limits
    job.paused_at = 1_700_000_000.0
    job.reason = "LLM budget reached"
    job.pause = {"limits": limits.as_dict(),
                 "spent": {"tokens": spent[0], "cost": spent[1]},
                 "held": {"tokens": 0, "cost": 0.0},
                 "next_call": {"tokens": next_call[0], "cost": next_call[1]}}
    job.estimate = estimate or {}
    return job


def test_twice_the_limit_that_refused_and_only_that_one() -> None:
    """Tokens refused (950 + 100 > 1,000) under a cost limit that still fits: only
    --max-llm-tokens is raised, to 2,000; a cost refused alone raises only --max-cost,
    written without an exponent."""
    tokens = _paused(BudgetLimits(max_llm_tokens=1000, max_cost=5.0), (950, 0.5), (100, 0.1))
    assert suggested_limits(tokens) == {"max_llm_tokens": 2000}
    assert resume_command(tokens) == (f"hopindex jobs resume {tokens.job_id} "
                                      "--max-llm-tokens 2000")
    cost = _paused(BudgetLimits(max_llm_tokens=10**6, max_cost=0.00003), (500, 0.00002),
                   (400, 0.000016))
    assert suggested_limits(cost) == {"max_cost": 0.00006}
    assert resume_command(cost).endswith(" --max-cost 0.00006")


def test_the_figures_or_the_estimate_raise_the_suggestion() -> None:
    """A limit of 10 with a next call of 652 tokens suggests 660 (not 20); a dry-run
    estimate of 1,960 tokens for the whole job suggests 2,000; a cost estimate of
    12.34 not yet started on, with 0.99 spent, suggests 14."""
    small = _paused(BudgetLimits(max_llm_tokens=10), (0, 0.0), (652, 0.0))
    assert suggested_limits(small) == {"max_llm_tokens": 660}
    estimated = _paused(BudgetLimits(max_llm_tokens=10), (0, 0.0), (652, 0.0), {
        "indexrag.stage1": {"calls": 3, "prompt_tokens": 1192, "completion_tokens": 768},
        "indexrag.stage2": {"calls": None, "prompt_tokens": None}})
    assert suggested_limits(estimated) == {"max_llm_tokens": 2000}
    money = _paused(BudgetLimits(max_cost=1.0), (0, 0.99), (0, 0.02),
                    {"indexrag.stage1": {"cost": 12.34}})
    assert suggested_limits(money) == {"max_cost": 14.0}


def test_the_suggestion_covers_what_was_spent_and_what_the_dry_run_left() -> None:
    """Stage 1 was estimated at 1,960 tokens and used 2,300 (the estimate was low);
    stage 2, estimated at 3,000, has not run. Paused at 2,000 with a 400-token call
    refused, the job needs 2,300 + 3,000: 5,300 is suggested, where the estimate of
    the whole job (4,960, so 5,000) would pause it again. The record's usage stands
    for the spend when the pause's figures say less."""
    job = _paused(BudgetLimits(max_llm_tokens=2000), (2300, 0.0), (400, 0.0), {
        "indexrag.stage1": {"prompt_tokens": 1192, "completion_tokens": 768},
        "indexrag.stage2": {"prompt_tokens": 2000, "completion_tokens": 1000}})
    job.llm["indexrag.stage1"] = LlmUsage(calls=3, prompt_tokens=1500, completion_tokens=800)
    assert suggested_limits(job) == {"max_llm_tokens": 5300}
    job.pause["spent"] = {"tokens": 0, "cost": 0.0}
    assert suggested_limits(job) == {"max_llm_tokens": 5300}


def test_pause_lines_show_costs_only_under_a_cost_limit() -> None:
    """The figures line carries costs when the job has a cost limit (unpriced calls
    count 0, which would read as free otherwise); a job not paused has no lines."""
    unpriced = _paused(BudgetLimits(max_llm_tokens=1000), (950, 0.0), (100, 0.0))
    lines = pause_lines(unpriced)
    assert lines[1] == ("  spent 950 tokens; held by calls in flight 0 tokens; the next "
                        "call needs about 100 tokens")
    assert lines[2] == f"  resume with: {resume_command(unpriced)}"
    priced = _paused(BudgetLimits(max_cost=1.0), (1200, 0.99), (100, 0.02))
    assert "spent 1,200 tokens (cost 0.99)" in pause_lines(priced)[1]
    assert "(max_cost 1)" in pause_lines(priced)[0]
    priced.state = JobState.RUNNING
    assert pause_lines(priced) == []


def test_a_pause_watch_tells_once_per_pause_and_resume() -> None:
    """Polls of the same pause announce it once; the next running poll announces the
    resume once; a second pause (a new paused_at) is announced again."""
    seen: list[tuple[str, str]] = []
    watch = PauseWatch(lambda job: seen.append(("paused", job.job_id)),
                       lambda job: seen.append(("resumed", job.job_id)))
    job = _paused(BudgetLimits(max_llm_tokens=10), (0, 0.0), (652, 0.0))
    running = Job.from_dict({**job.as_dict(), "state": "running"})
    again = Job.from_dict({**job.as_dict(), "paused_at": 1_700_000_100.0})
    for polled in (running, job, job, running, running, again, again):
        watch(polled)
    assert seen == [("paused", job.job_id), ("resumed", job.job_id),
                    ("paused", job.job_id)]
