"""How the CLI shows jobs and query results to a person."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Column, Table

from hopindex.api.budgets import budget_text
from hopindex.api.render_batches import render_batches
from hopindex.api.render_estimate import render_estimate
from hopindex.api.render_multiplier import render_multiplier
from hopindex.api.render_pause import pause_lines
from hopindex.core.errors import HopindexError
from hopindex.core.models import Job
from hopindex.methods.base import QueryResult, QueryUsage, RankedPassage
from hopindex.methods.llm_steps import ANSWER_STEP
from hopindex.methods.registry import get_query_method


def render_job(console: Console, job: Job, *, max_errors: int = 20) -> None:
    duration = ""
    if job.finished_at and job.started_at:
        duration = f" in {job.finished_at - job.started_at:.2f}s"
    console.print(f"job {job.job_id} [{job.kind.value}] index={job.index} "
                  f"state={job.state.value}{duration}", markup=False)
    # Steps in the order the job met them: validate, each phase of the index's method
    # (by its qualified name), embed, finalize.
    # Counts fold, not cut, on a narrow console: a count cut short reads as another.
    table = Table("stage", *(Column(name, overflow="fold")
                             for name in ("total", "done", "failed", "skipped")), box=None)
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
        forgiven = [f"{getattr(usage, name)} {name}" for name in usage.READING_FIELDS
                    if getattr(usage, name)]
        if forgiven:
            # Repairs are among the calls above; the rest is what reading the replies
            # forgave (values coerced, elements dropped, 0-1 scores rescaled, cut replies).
            console.print(f"  replies: {', '.join(forgiven)}", markup=False)
    if len(job.llm) > 1:
        total = job.llm_total
        console.print(f"LLM total: {total.calls} calls, {total.prompt_tokens} prompt + "
                      f"{total.completion_tokens} completion tokens{cost_text(total.cost)}",
                      markup=False)
    if job.embedding.tokens:
        console.print(f"embedding: {job.embedding.requests} requests, {job.embedding.tokens} "
                      f"tokens{cost_text(job.embedding.cost)}", markup=False)
    render_batches(console, job)
    render_multiplier(console, job)
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
    _render_runtime_notes(console, job)
    for error in job.errors[:max_errors]:
        where = f" ({error.where})" if error.where and error.where != error.item else ""
        console.print(f"  failed {error.stage}: {error.item}{where}: {error.reason}",
                      markup=False, soft_wrap=True)
    if len(job.errors) > max_errors:
        console.print(f"  … and {len(job.errors) - max_errors} more errors "
                      f"(hopindex jobs {job.job_id} --json)")


def _render_runtime_notes(console: Console, job: Job) -> None:
    """What the runtime did with the job (re-drives) and where its trace is."""
    for note in job.redrives:
        console.print(f"re-driven: {note}", markup=False, soft_wrap=True)
    if job.trace_id:
        console.print(f"trace: {job.trace_id}", markup=False)


# Passages sit under their rank and title.
PASSAGE_INDENT = "      "
# Narrower than this, --full's wrapping would leave a word or two a line.
MIN_PASSAGE_COLUMNS = 20


def render_result(console: Console, result: QueryResult, *, width: int = 100,
                  full: bool = False) -> None:
    """The question, the answer and its LLM use, then each passage with its provenance
    (the unit that found it, when not the passage itself): its text shortened to
    ``width`` characters, or with ``full`` whole, wrapped to the console's width (the
    CLI's console has none when its output is piped: one line per paragraph)."""
    embedding = ""
    if result.usage.embedding_tokens:
        # Without an answer there is no LLM line: the cost (the embeddings') goes here.
        cost = cost_text(result.usage.cost) if result.answer is None else ""
        embedding = f", {result.usage.embedding_tokens} embedding tokens{cost}"
    # The model's load is this process's start-up, not the query: said apart.
    load = (f", embedding model loaded in {result.embedder_load_s:.2f} s"
            if result.embedder_load_s else "")
    console.print(f"[bold]{result.question}[/bold]  "
                  f"(method={result.method}, {result.latency_s * 1000:.1f} ms{embedding}{load})")
    if result.answer is not None:
        usage = result.usage
        console.print(f"  answer: {result.answer}", markup=False)
        console.print(llm_line(usage), markup=False)
    render_passages(console, result.passages, width=width, full=full)


def llm_line(usage: QueryUsage) -> str:
    return (f"  LLM: {usage.llm_calls} calls, {usage.cache_hits} cached, "
            f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion "
            f"tokens{cost_text(usage.cost)}")


def render_passages(console: Console, passages: Sequence[RankedPassage], *,
                    width: int = 100, full: bool = False) -> None:
    """Each passage under its rank and title, with its citation and provenance."""
    for passage in passages:
        body = passage.text.split("\n", 1)[-1]
        console.print(f"  {passage.rank:>2}. [bold]{escape(passage.title)}[/bold] "
                      f"(doc {escape(passage.doc_id)}, score {passage.score:.4f})")
        if passage.citation is not None:
            console.print(f"{PASSAGE_INDENT}[{passage.citation.label()}]", markup=False)
        console.print(passage_text(body, console.width) if full else
                      textwrap.indent(textwrap.shorten(body, width=width), PASSAGE_INDENT),
                      markup=False)
        if passage.via_kind != "passage":
            via = (passage.via_text if full
                   else textwrap.shorten(passage.via_text, width=width - 10))
            line = f"via {passage.via_kind} {via!r}"
            console.print(passage_text(line, console.width) if full else PASSAGE_INDENT + line,
                          markup=False)


def passage_text(body: str, columns: int) -> str:
    """A passage's whole text, indented, each of its lines wrapped to ``columns``: its
    own line breaks (paragraphs, list items) kept."""
    wrap = max(columns - len(PASSAGE_INDENT), MIN_PASSAGE_COLUMNS) + len(PASSAGE_INDENT)
    return "\n".join(textwrap.fill(line, width=wrap, initial_indent=PASSAGE_INDENT,
                                    subsequent_indent=PASSAGE_INDENT) if line.strip() else ""
                      for line in body.split("\n"))


def warning_lines(result: QueryResult) -> list[str]:
    """The lines ``hopindex query`` prints on stderr for the result's warnings (an index
    that is partial or building, with what completes it)."""
    return [f"warning: {w.message}" for w in result.warnings]


def degraded_note(result: QueryResult) -> str | None:
    """The one line ``hopindex query`` prints on stderr for a result that degraded or
    whose answer was cut, naming the first step that degraded (the cause of the
    rest, which ``--json`` and ``--trace`` list); None for a result that did neither."""
    notes: list[str] = []
    if result.degraded:
        first = result.degraded[0]
        # An LLM error's message starts with its stage, often the step's own name.
        cause = (first.reason if first.reason.startswith(f"{first.step}:")
                 else f"{first.step}: {first.reason}")
        more = len(result.degraded) - 1
        cause += f"; {more} more step{'s' if more > 1 else ''} degraded" if more else ""
        unanswered = result.answer is None and any(
            d.step == ANSWER_STEP for d in result.degraded)
        notes.append(f"answer unavailable ({cause}); showing retrieved passages" if unanswered
                     else f"degraded ({cause})")
    if result.answer_truncated:
        notes.append("the answer was cut at its token budget")
    return f"note: {'; '.join(notes)}" if notes else None


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
    trace = result.full_trace()
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
