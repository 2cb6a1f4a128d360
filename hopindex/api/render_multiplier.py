"""How a job shows its ingestion multiplier: the corpus it read, in tokens, and its LLM
tokens per corpus token, per phase and in all (``hopindex jobs JOB_ID``)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from hopindex.core.models import Job
from hopindex.core.token_multiplier import (
    TokenMultiplier,
    multiplier_text,
    phase_multipliers,
    token_multiplier,
)

# How the corpus was counted (scheduler/dry_run_tokens.py document_tokens): said beside
# the figure, since a reader would otherwise take it for a tokenizer's count.
CORPUS_BASIS = "title and text at 0.25 tokens per character, as the dry run estimates"


def render_multiplier(console: Console, job: Job) -> None:
    """The corpus line, then a table of multipliers; nothing for a job that counted no
    corpus (a delete, a method without an LLM, a record from before)."""
    if job.corpus_tokens is None:
        return
    console.print(f"corpus: {job.corpus_tokens:,} tokens of the documents the LLM phases "
                  f"read ({CORPUS_BASIS})", markup=False, soft_wrap=True)
    overall = token_multiplier(job.llm_total, job.corpus_tokens)
    if overall is None:
        console.print("LLM tokens per corpus token: - (no document read)", markup=False)
        return
    table = Table(box=None, padding=(0, 1), pad_edge=False)
    table.add_column("LLM tokens per corpus token", no_wrap=True)
    for column in ("prompt", "completion", "total"):
        table.add_column(column, justify="right")
    phases = phase_multipliers(job.llm, job.corpus_tokens)
    for phase, multiplier in phases.items():
        table.add_row(phase, *_cells(multiplier))
    if len(phases) != 1:
        table.add_row("job", *_cells(overall))
    console.print(table)


def _cells(multiplier: TokenMultiplier) -> list[str]:
    return [multiplier_text(multiplier.prompt), multiplier_text(multiplier.completion),
            multiplier_text(multiplier.total)]
