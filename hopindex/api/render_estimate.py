"""How a job shows its dry-run estimate beside what its LLM calls really used: one
row of estimates and one of actual figures per phase (``hopindex jobs JOB_ID``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from hopindex.core.models import Job, LlmUsage

# What each token basis of a plan means (scheduler/dry_run_tokens.py TokenBasis).
TOKEN_NOTES = {
    "history": "prompt tokens per prompt character and completion tokens per document "
               "character, as the provider reported them on this index's earlier jobs of "
               "this phase and model",
    "history_per_call": "tokens per call reported by the provider on this index's earlier "
                        "jobs (none of them recorded its characters, or the prompts are "
                        "built from replies not known yet)",
    "characters": "0.25 tokens per prompt character, 256 completion tokens per call "
                  "(an approximation for English text; no tokenizer is used)",
}
BOUND = "bound"


def render_estimate(console: Console, job: Job) -> None:
    """The job's estimate per phase (planned when it was submitted) over what the
    provider then reported; nothing for a job with no estimate (a method without an
    LLM, a job from before estimates, or one whose planning failed)."""
    if not job.estimate:
        return
    priced = any(figures.get("cost") is not None for figures in job.estimate.values()) \
        or any(usage.cost is not None for usage in job.llm.values())
    # Two-line headers: with a cost column the table still fits 80 columns (a pipe's).
    table = Table(box=None, padding=(0, 1), pad_edge=False)
    table.add_column("phase", no_wrap=True)
    table.add_column("", no_wrap=True)
    # Folded, not cut, on a narrower console: a figure cut short reads as another.
    for column in ("calls", "prompt\ntokens", "completion\ntokens",
                   *(("cost",) if priced else ())):
        table.add_column(column, justify="right", overflow="fold")
    notes: set[str] = set()
    for phase, figures in job.estimate.items():
        planning = str(figures.get("planning", ""))
        if str(figures.get("token_basis")) in TOKEN_NOTES:
            notes.add(str(figures["token_basis"]))
        calls = ("not planned" if planning == "not_planned"
                 else _estimated(figures.get("calls"), planning))
        table.add_row(phase, "estimate", calls,
                      _estimated(figures.get("prompt_tokens"), planning),
                      _estimated(figures.get("completion_tokens"), planning),
                      *((_estimated_cost(figures.get("cost"), planning),) if priced else ()))
        used = job.llm.get(phase, LlmUsage())
        table.add_row("", "actual", f"{used.calls:,}", f"{used.prompt_tokens:,}",
                      f"{used.completion_tokens:,}",
                      *((cost_figure(used.cost),) if priced else ()))
    console.print("LLM estimate (planned at submit, as a dry run) and actual use:",
                  markup=False)
    console.print(table)
    for basis in sorted(notes):
        console.print(f"  estimated tokens ({basis}): {TOKEN_NOTES[basis]}", markup=False,
                      soft_wrap=True)


def _estimated(value: Any, planning: str) -> str:
    if not isinstance(value, int):
        return "-"
    return f"≤ {value:,}" if planning == BOUND else f"{value:,}"


def _estimated_cost(value: Any, planning: str) -> str:
    if not isinstance(value, int | float):
        return "-"
    return f"≤ {cost_figure(value)}" if planning == BOUND else cost_figure(value)


def cost_figure(cost: float | None) -> str:
    """A cost in the prices' currency (hopindex names none); "-" unpriced."""
    if cost is None:
        return "-"
    # Small sums keep their significant digits; a cent-level figure needs no more.
    return f"{cost:.4f}" if cost >= 0.01 else f"{cost:.6g}"
