"""LLM modes on the command line: ``--llm-mode`` of the commands that start a job
(ingest, repair, rebuild), and an index's default mode as ``indexes llm-mode`` prints
it. (How a job's mode is chosen: core/llm_modes.py.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from hopindex.core.llm_modes import CHOICES

F = TypeVar("F", bound=Callable[..., Any])

LLM_MODE_FLAG = "--llm-mode"


def llm_mode_option(command: F) -> F:
    """``--llm-mode`` on ``command``, as its ``llm_mode`` parameter (None: not given). A
    choice click checks: any other value is a usage error naming the flag and the
    modes."""
    return click.option(
        LLM_MODE_FLAG, "llm_mode", type=click.Choice(CHOICES), default=None,
        help="How the job's LLM calls are made: sync, one request at a time, or batch, "
             "through the provider's Batch API (about half the price, results within its "
             "completion window; the job waits on the provider meanwhile). Default: the "
             "index's default mode (`indexes llm-mode`), else HOPINDEX_LLM_MODE.")(command)


def print_llm_mode(view: dict[str, Any], *, as_json: bool) -> None:
    """An index's default LLM mode (``views.llm_mode_view`` fields)."""
    if as_json:
        click.echo(json.dumps(view, indent=2))
        return
    name, own, effective = view["index"], view["llm_mode"], view["effective"]
    if own is None:
        click.echo(f"index {name}: no default LLM mode; its jobs run in {effective} mode "
                   "(HOPINDEX_LLM_MODE) unless they name one")
        return
    click.echo(f"index {name}: default LLM mode {own}")
