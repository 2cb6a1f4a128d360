"""How the CLI shows jobs and query results to a person."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from hopindex.api.budgets import budget_text
from hopindex.api.render_estimate import render_estimate
from hopindex.api.render_pause import pause_lines
from hopindex.core.errors import HopindexError
from hopindex.core.models import Job
from hopindex.methods.base import QueryResult
from hopindex.methods.registry import get_query_method


def render_job(console: Console, job: Job, *, max_errors: int = 20) -> None:
    duration = ""
    if job.finished_at and job.started_at:
        duration = f" in {job.finished_at - job.started_at:.2f}s"
    console.print(f"job {job.job_id} [{job.kind.value}] index={job.index} "
                  f"state={job.state.value}{duration}", markup=False)
    # Steps in the order the job met them: validate, each phase of the index's method
    # (by its qualified name), embed, finalize.
    table = Table("stage", "total", "done", "failed", "skipped", box=None)
    for stage, c in job.counts.items():
        table.add_row(stage, str(c.total), str(c.done), str(c.failed), str(c.skipped))
    console.print(table)
    console.print(f"units embedded: {job.units_embedded}; groups rebuilt: "
                  f"{job.groups_rebuilt}, removed: {job.groups_removed}")
    for stage_name, usage in sorted(job.llm.items()):
        console.print(f"LLM {stage_name}: {usage.calls} calls, {usage.cache_hits} cached, "
                      f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion "
                      f"tokens{cost_text(usage.cost)}, {usage.retries} retries, "
                      f"{usage.limiter_wait_s:.1f}s waiting on the rate limiter", markup=False)
    if len(job.llm) > 1:
        total = job.llm_total
        console.print(f"LLM total: {total.calls} calls, {total.prompt_tokens} prompt + "
                      f"{total.completion_tokens} completion tokens{cost_text(total.cost)}",
                      markup=False)
    if job.embedding.tokens:
        console.print(f"embedding: {job.embedding.requests} requests, {job.embedding.tokens} "
                      f"tokens{cost_text(job.embedding.cost)}", markup=False)
    render_estimate(console, job)
    # Reasons and failures unwrapped (soft_wrap): a file path or a reason broken at the
    # console's width (80 columns when piped) cannot be searched for or copied.
    if job.reason:
        console.print(f"reason: {job.reason}", markup=False, soft_wrap=True)
    paused = pause_lines(job)
    for line in paused:
        console.print(line, markup=False, soft_wrap=True)
    if job.budget.is_limited and not paused:
        console.print(f"LLM budget: {budget_text(job.budget.as_dict())}", markup=False)
    for note in job.redrives:
        console.print(f"re-driven: {note}", markup=False, soft_wrap=True)
    for error in job.errors[:max_errors]:
        where = f" ({error.where})" if error.where and error.where != error.item else ""
        console.print(f"  failed {error.stage}: {error.item}{where}: {error.reason}",
                      markup=False, soft_wrap=True)
    if len(job.errors) > max_errors:
        console.print(f"  … and {len(job.errors) - max_errors} more errors "
                      f"(hopindex jobs {job.job_id} --json)")


def render_result(console: Console, result: QueryResult, *, width: int = 100) -> None:
    embedding = ""
    if result.usage.embedding_tokens:
        # Without an answer there is no LLM line: the cost (the embeddings') goes here.
        cost = cost_text(result.usage.cost) if result.answer is None else ""
        embedding = f", {result.usage.embedding_tokens} embedding tokens{cost}"
    console.print(f"[bold]{result.question}[/bold]  "
                  f"(method={result.method}, {result.latency_s * 1000:.1f} ms{embedding})")
    if result.answer is not None:
        usage = result.usage
        console.print(f"  answer: {result.answer}", markup=False)
        console.print(f"  LLM: {usage.llm_calls} calls, {usage.cache_hits} cached, "
                      f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion "
                      f"tokens{cost_text(usage.cost)}", markup=False)
    for passage in result.passages:
        body = passage.text.split("\n", 1)[-1]
        console.print(f"  {passage.rank:>2}. [bold]{passage.title}[/bold] "
                      f"(doc {passage.doc_id}, score {passage.score:.4f})")
        console.print(textwrap.indent(textwrap.shorten(body, width=width), "      "),
                      markup=False)
        if passage.via_kind != "passage":
            console.print(f"      via {passage.via_kind} "
                          f"{textwrap.shorten(passage.via_text, width=width - 10)!r}",
                          markup=False)


def cost_text(cost: float | None) -> str:
    """``, cost 0.0123``, in whatever currency the prices are given in (hopindex names
    none); nothing when unpriced, since a zero would claim the calls were free."""
    if cost is None:
        return ""
    # Small sums keep their significant digits; a cent-level figure needs no more.
    return f", cost {cost:.4f}" if cost >= 0.01 else f", cost {cost:.6g}"


def render_trace(console: Console, result: QueryResult) -> None:
    """The method's decision trace: as the method describes it for people when it does
    (its ``describe_trace``), else as ``key: value`` lines."""
    trace = result.trace
    lines = _described_trace(result.method, trace)
    if lines is not None:
        for line in lines:
            console.print(line, markup=False)
        return
    console.print("[bold]trace[/bold]")
    for key, value in trace.items():
        console.print(f"  {key}: {json.dumps(value, ensure_ascii=False)}", markup=False)


def _described_trace(method: str, trace: dict[str, Any]) -> list[str] | None:
    try:
        spec = get_query_method(method)
    except HopindexError:
        return None  # a method of another process's registry: its trace as it is
    # Optional on QueryMethodSpec: a method without it leaves its trace as data.
    describe: Callable[[dict[str, Any]], list[str]] | None = getattr(
        spec, "describe_trace", None)
    return describe(trace) if describe is not None and trace else None
