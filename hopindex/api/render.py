"""How the CLI shows jobs and query results to a person."""

from __future__ import annotations

import json
import textwrap
from typing import Any

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
    for note in job.redrives:
        console.print(f"re-driven: {note}", markup=False)
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


def render_trace(console: Console, result: QueryResult) -> None:
    """The method's decision trace: bridgerag's decision record as a readable report,
    any other method's trace as ``key: value`` lines."""
    trace = result.trace
    if "pool" in trace and "bridges" in trace:
        render_decision_record(console, trace)
        return
    console.print("[bold]trace[/bold]")
    for key, value in trace.items():
        console.print(f"  {key}: {json.dumps(value, ensure_ascii=False)}", markup=False)


def render_decision_record(console: Console, record: dict[str, Any]) -> None:
    """A bridgerag decision record: bridge, entities, SVO queries, the pool with its
    scores in ranked order, fallbacks, and where the record was persisted."""
    judge = record.get("judge", {})
    params = record.get("params", {})
    console.print(f"[bold]decision record[/bold] {record.get('record_id', '')}")
    console.print(f"  ranked by condition {record.get('ranked_by') or '-'} (asked "
                  f"{params.get('condition')}; extraction {params.get('extraction')}; "
                  f"alpha {params.get('alpha')})", markup=False)
    console.print(f"  judge: {judge.get('status', '-')} ({judge.get('site', '-')}); "
                  f"{record.get('llm_calls', 0)} LLM calls; "
                  f"{record.get('vector_searches', 0)} vector searches", markup=False)
    for i, bridge in enumerate(record.get("bridges", []), start=1):
        console.print(f"  bridge {i}: {bridge['label']} (score {bridge['score']:.4f})",
                      markup=False)
        console.print(f"    unit {bridge['unit_id']}, doc {', '.join(bridge['doc_ids'])}",
                      markup=False)
    console.print(f"  entities: {' | '.join(record.get('entities', [])) or '-'}", markup=False)
    for i, query in enumerate(record.get("svo_queries", []), start=1):
        console.print(f"  SVO query {i}: {query}", markup=False)
    for fallback in record.get("fallbacks", []):
        console.print(f"  fallback at {fallback['step']} -> {fallback['to']}: "
                      f"{fallback['reason']}", markup=False)
    pool = sorted(record.get("pool", []), key=lambda p: p["rank"])
    table = Table("#", "fused", "judge", "svo", "pool", "found by", "unit", "passage",
                  box=None, title=f"pool ({len(pool)} candidates, best first)",
                  title_justify="left")
    for entry in pool:
        judged = entry["judge_score"]
        table.add_row(str(entry["rank"]), f"{entry['fused']:.3f}",
                      "-" if judged is None else f"{judged:g}", f"{entry['svo_score']:.3f}",
                      f"{entry['pool_score']:.3f}", ",".join(entry["found_by"]),
                      entry["unit_id"][:8], textwrap.shorten(entry["label"], width=48))
    console.print(table)
    top = record.get("top", [])
    console.print(f"  top {len(top)}: " + "; ".join(
        f"{t['rank']}. {t['title'] or t['doc_id']}" for t in top), markup=False)
    if record.get("persisted_to"):
        console.print(f"  persisted to {record['persisted_to']}", markup=False)
