"""What every ``hopindex`` command shares: consoles, exit codes, error handling and the
printing of jobs (local and remote commands print alike)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Console

from hopindex.core.errors import HopindexError
from hopindex.core.models import Job, Stage

if TYPE_CHECKING:
    from hopindex.methods.base import QueryResult

F = TypeVar("F", bound=Callable[..., Any])

console = Console()
err_console = Console(stderr=True)

EXIT_INPUT = 2
EXIT_PARTIAL = 3


def handle_errors(func: F) -> F:
    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except HopindexError as exc:
            err_console.print(f"error: {exc}", markup=False)
            sys.exit(EXIT_INPUT)

    return wrapper  # type: ignore[return-value]  # wraps keeps the signature


def report_job(job: Job, *, as_json: bool) -> None:
    """Print a finished job; exit 3 when some documents failed (the rest landed)."""
    from hopindex.api.render import render_job

    if as_json:
        click.echo(json.dumps(job.as_dict(), indent=2))
    else:
        render_job(console, job)
    if job.errors:
        sys.exit(EXIT_PARTIAL)


def print_jobs(found: list[Job], *, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([j.as_dict() for j in found], indent=2))
        return
    for job in found:
        stage1 = job.counts[Stage.STAGE1]
        console.print(f"{job.job_id}  {job.kind.value:<6} {job.index:<16} "
                      f"{job.state.value:<10} stage1 {stage1.done}/{stage1.total} "
                      f"errors={len(job.errors)}", markup=False)


def print_result(result: QueryResult, *, as_json: bool, trace: bool) -> None:
    """A query's answer: JSON, or passages with provenance (and the decision trace)."""
    from hopindex.api.render import render_result, render_trace

    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2))
        return
    render_result(console, result)
    if trace:
        render_trace(console, result)
