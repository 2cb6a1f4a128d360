"""How the CLI shows jobs and query results to a person."""

from __future__ import annotations

import textwrap

from rich.console import Console
from rich.table import Table

from hopindex.core.models import Job, Stage
from hopindex.methods.base import QueryResult


def render_job(console: Console, job: Job, *, max_errors: int = 20) -> None:
    duration = ""
    if job.finished_at and job.started_at:
        duration = f" in {job.finished_at - job.started_at:.2f}s"
    console.print(f"job {job.job_id} [{job.kind.value}] index={job.index} "
                  f"state={job.state.value}{duration}")
    table = Table("stage", "total", "done", "failed", "skipped", box=None)
    for stage in Stage:
        c = job.counts[stage]
        table.add_row(stage.value, str(c.total), str(c.done), str(c.failed), str(c.skipped))
    console.print(table)
    console.print(f"units embedded: {job.units_embedded}; bridge entities recomputed: "
                  f"{job.bridge_entities_recomputed}, removed: {job.bridge_entities_removed}")
    for stage_name, usage in sorted(job.llm.items()):
        console.print(f"LLM {stage_name}: {usage.calls} calls, {usage.cache_hits} cached, "
                      f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion "
                      f"tokens, {usage.retries} retries, {usage.limiter_wait_s:.1f}s waiting "
                      "on the rate limiter")
    if job.reason:
        console.print(f"reason: {job.reason}")
    for error in job.errors[:max_errors]:
        where = f" ({error.where})" if error.where and error.where != error.item else ""
        console.print(f"  failed {error.stage.value}: {error.item}{where}: {error.reason}",
                      markup=False)
    if len(job.errors) > max_errors:
        console.print(f"  … and {len(job.errors) - max_errors} more errors "
                      f"(hopindex jobs {job.job_id} --json)")


def render_result(console: Console, result: QueryResult, *, width: int = 100) -> None:
    console.print(f"[bold]{result.question}[/bold]  "
                  f"(method={result.method}, {result.latency_s * 1000:.1f} ms)")
    if result.answer is not None:
        usage = result.usage
        console.print(f"  answer: {result.answer}", markup=False)
        console.print(f"  LLM: {usage.llm_calls} calls, {usage.cache_hits} cached, "
                      f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens")
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
