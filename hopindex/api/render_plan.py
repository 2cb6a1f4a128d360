"""How an ingest dry run prints: the documents line, one table row per phase, how each
phase was planned, which estimate the tokens are, the cost in all at the synchronous
and the batch prices and the mode the ingest would run in, the validation errors; or
the plan as JSON."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from hopindex.api.cli_support import console
from hopindex.api.render_estimate import TOKEN_NOTES, cost_figure

MAX_ERRORS_SHOWN = 20


def print_plan(plan: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(plan, indent=2))
        return
    render_plan(console, plan)


def _figure(value: int | None, planning: str) -> str:
    if value is None:
        return "-"
    return f"<= {value:,}" if planning == "bound" else f"{value:,}"


def _cost(cost: float | None, planning: str) -> str:
    if cost is None:
        return "-"
    return f"<= {cost_figure(cost)}" if planning == "bound" else cost_figure(cost)


# Where the mode the ingest would run in comes from (core/llm_modes.py ModeSource).
_MODE_FROM = {"request": "--llm-mode", "index": "the index's default (`indexes llm-mode`)",
              "settings": "HOPINDEX_LLM_MODE"}


def mode_lines(plan: dict[str, Any]) -> list[str]:
    """The LLM cost in all at both prices (when priced), and the mode the ingest would
    run in (when a phase calls an LLM): ``IngestPlanView``'s ``llm_cost`` and
    ``llm_mode``. A server older than these sends neither: no lines."""
    lines = []
    cost = plan.get("llm_cost")
    if cost:
        bound = "<= " if cost["bound"] else ""
        left_out = (f"; not counted: {', '.join(cost['left_out'])} (not planned)"
                    if cost["left_out"] else "")
        lines.append(f"LLM cost: {bound}{cost_figure(cost['sync'])} synchronous, "
                     f"{bound}{cost_figure(cost['batch'])} in batch mode "
                     f"({cost['batch_discount']:.0%} off){left_out}")
    calls_llm = any(phase["planning"] != "no_llm" for phase in plan["phases"])
    if "llm_mode" in plan and calls_llm:
        source = _MODE_FROM.get(str(plan.get("llm_mode_from")), "")
        lines.append(f"LLM mode: the ingest would run in {plan['llm_mode']} mode"
                     + (f" ({source})" if source else ""))
    return lines


def render_plan(out: Console, plan: dict[str, Any]) -> None:
    docs = plan["documents"]
    state = "" if plan["index_exists"] else " (new index)"
    out.print(f"dry run: index {plan['index']}{state}, method {plan['method']}, model "
              f"{plan['model'] or '-'}; nothing was written and no LLM was called",
              markup=False)
    removed = f", {docs['removed']} removed (gone from their files)" if docs.get("removed") else ""
    out.print(f"documents: {docs['new']} new, {docs['changed']} changed, "
              f"{docs['unchanged']} unchanged, {docs['invalid']} invalid{removed}", markup=False)
    # The basis is a sentence: printed under the table, where it wraps as text.
    priced = any(phase.get("cost") is not None for phase in plan["phases"])
    table = Table(show_edge=False)
    table.add_column("phase", no_wrap=True)
    # Too narrow a console (--width, a small terminal) folds a cell onto the next
    # line: a figure cut short (`0.00720…`) would read as another number.
    table.add_column("planning", overflow="fold")
    for column in ("LLM calls", "cached", "prompt tokens", "completion tokens",
                   *(("cost",) if priced else ())):
        table.add_column(column, justify="right", overflow="fold")
    notes: set[str] = set()
    for phase in plan["phases"]:
        planning = phase["planning"]
        if phase["token_basis"] in TOKEN_NOTES:
            notes.add(phase["token_basis"])
        cost = (_cost(phase.get("cost"), planning),) if priced else ()
        table.add_row(phase["phase"], planning.replace("_", " "),
                      _figure(phase["calls"], planning), f"{phase['cache_hits']:,}",
                      _figure(phase["prompt_tokens"], planning),
                      _figure(phase["completion_tokens"], planning), *cost)
    out.print(table)
    for phase in plan["phases"]:
        out.print(f"{phase['phase']}: {phase['basis']}", markup=False)
    for basis in sorted(notes):
        out.print(f"tokens ({basis}): {TOKEN_NOTES[basis]}", markup=False)
    for line in mode_lines(plan):
        out.print(line, markup=False)
    embedding = plan.get("embedding")
    if embedding:
        priced_at = ("" if embedding["cost"] is None
                     else f", cost {cost_figure(embedding['cost'])}")
        out.print(f"embedding ({embedding['model']}): >= {embedding['tokens']:,} tokens"
                  f"{priced_at} "
                  f"({embedding['basis']})", markup=False)
    errors = plan["errors"]
    for error in errors[:MAX_ERRORS_SHOWN]:
        where = f" ({error['where']})" if error.get("where") else ""
        out.print(f"invalid: {error['item']}{where}: {error['reason']}", markup=False)
    if len(errors) > MAX_ERRORS_SHOWN:
        out.print(f"... and {len(errors) - MAX_ERRORS_SHOWN} more invalid records",
                  markup=False)
