"""How the CLI shows a job paused on its LLM budget: what it spent against which limit,
and the command that resumes it, with limits that let it go on.

The limits suggested are a starting point, not a promise: twice the limit that
refused the call, or more when the job's own figures say it needs more (what it
spent and holds plus the refused call, or what it spent plus what its dry run
estimated for the work it has not done yet), rounded up to two significant digits.
``hopindex jobs resume JOB_ID`` alone retries with the limits as they are (useful
once an index's prices or the estimate changed).
"""

from __future__ import annotations

import shlex
import time
from decimal import ROUND_CEILING, Decimal
from typing import Any

import click

from hopindex.api.budgets import COST_FLAG, TOKENS_FLAG, budget_text, plain_number
from hopindex.core.budget import COST_TOLERANCE, MAX_COST, MAX_LLM_TOKENS
from hopindex.core.models import Job, JobState, LlmUsage

_GROWTH = 2


def _figure(figures: dict[str, Any], part: str, kind: str) -> float:
    value = (figures.get(part) or {}).get(kind)
    return float(value) if isinstance(value, int | float) else 0.0


def _used(figures: dict[str, Any], kind: str) -> float:
    """What the job's account needed of ``kind`` (tokens, cost) when the call was refused:
    spent, held by calls in flight, and the refused call's estimate."""
    return sum(_figure(figures, part, kind) for part in ("spent", "held", "next_call"))


def _usage(usage: LlmUsage | None, kind: str) -> float:
    if usage is None:
        return 0.0
    if kind == "tokens":
        return float(usage.prompt_tokens + usage.completion_tokens)
    return usage.cost or 0.0  # unpriced calls count nothing against a cost


def _spent(job: Job, kind: str) -> float:
    """What the job's finished calls spent: the pause's figures (its budget account),
    or the usage on its record when that says more (figures the account could not
    refresh)."""
    return max(_figure(job.pause, "spent", kind), _usage(job.llm_total, kind))


def _remaining_estimate(job: Job, kind: str) -> float:
    """What the dry run (``Job.estimate``) planned for the work the job has not done
    yet: per phase, its estimate less what that phase's calls used, never below 0; 0
    for a job without one. A phase the dry run could not plan counts nothing."""
    names = ("prompt_tokens", "completion_tokens") if kind == "tokens" else ("cost",)
    remaining = 0.0
    for phase, figures in job.estimate.items():
        planned = sum(float(figures[n]) for n in names
                      if isinstance(figures.get(n), int | float))
        remaining += max(planned - _usage(job.llm.get(phase), kind), 0.0)
    return remaining


def _round_up(value: float) -> Decimal:
    """``value`` rounded up to two significant digits (12,345 → 13,000; 0.0234 → 0.024)."""
    if value <= 0:
        return Decimal(0)
    exact = Decimal(repr(float(value)))
    step = Decimal(1).scaleb(exact.adjusted() - 1)
    return (exact / step).to_integral_value(rounding=ROUND_CEILING) * step


def suggested_limits(job: Job) -> dict[str, float]:
    """Higher limits to resume the paused job with, by field (``max_llm_tokens``,
    ``max_cost``): those that refused the call, or every limit set when the pause's
    figures do not say which did."""
    figures = job.pause
    limits = figures.get("limits") or job.budget.as_dict()
    kinds = {MAX_LLM_TOKENS: "tokens", MAX_COST: "cost"}
    set_limits = {field: float(limits[field]) for field in kinds
                  if isinstance(limits.get(field), int | float)}
    refused = {field for field, limit in set_limits.items()
               if _used(figures, kinds[field]) > limit + (
                   COST_TOLERANCE if field == MAX_COST else 0)}
    suggested: dict[str, float] = {}
    for field in refused or set_limits:
        limit, kind = set_limits[field], kinds[field]
        value = _round_up(max(_GROWTH * limit, _used(figures, kind),
                              _spent(job, kind) + _remaining_estimate(job, kind)))
        if value > Decimal(repr(limit)):
            suggested[field] = int(value) if field == MAX_LLM_TOKENS else float(value)
    return suggested


def _api_prefix() -> str:
    """``--api URL `` when this command was given one (an environment's
    HOPINDEX_API_URL reaches the resume command by itself)."""
    ctx = click.get_current_context(silent=True)
    url = ctx.find_root().params.get("api_url") if ctx is not None else None
    return f"--api {shlex.quote(url)} " if url else ""


def resume_command(job: Job) -> str:
    """The command that resumes the paused job with the suggested limits."""
    flags = {MAX_LLM_TOKENS: TOKENS_FLAG, MAX_COST: COST_FLAG}
    parts = [f"hopindex {_api_prefix()}jobs resume {shlex.quote(job.job_id)}"]
    for field, value in suggested_limits(job).items():
        shown = f"{int(value)}" if field == MAX_LLM_TOKENS else plain_number(value)
        parts.append(f"{flags[field]} {shown}")
    return " ".join(parts)


def _spend(figures: dict[str, Any], part: str, *, priced: bool) -> str:
    # Unpriced calls count a cost of 0: shown only under a cost limit, where it is real.
    cost = f" (cost {plain_number(_figure(figures, part, 'cost'))})" if priced else ""
    return f"{int(_figure(figures, part, 'tokens')):,} tokens{cost}"


def pause_lines(job: Job) -> list[str]:
    """A paused job's pause: when, what it spent, held and needed, and how to resume it;
    nothing for a job that is not paused."""
    if job.state is not JobState.PAUSED:
        return []
    figures = job.pause
    when = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(job.paused_at))
            if job.paused_at is not None else "at an unrecorded time")
    lines = [f"paused {when} on its LLM budget ({budget_text(job.budget.as_dict())})"]
    if figures:
        priced = MAX_COST in (figures.get("limits") or job.budget.as_dict())
        lines.append(f"  spent {_spend(figures, 'spent', priced=priced)}; held by calls in "
                     f"flight {_spend(figures, 'held', priced=priced)}; the next call needs "
                     f"about {_spend(figures, 'next_call', priced=priced)}")
    lines.append(f"  resume with: {resume_command(job)}")
    return lines


def pause_notice(job: Job, *, in_process: bool) -> dict[str, Any]:
    """The pause as one JSON object (``--json``'s notice on stderr): the job.paused
    event's fields, the resume command, and whether this process waits to carry the
    job on (``waiting``: it runs the job itself)."""
    return {"event": "job.paused", "job_id": job.job_id, "index": job.index,
            "reason": job.reason, "budget": job.budget.as_dict(), "pause": job.pause,
            "resume": resume_command(job), "waiting": in_process}
