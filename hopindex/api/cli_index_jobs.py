"""``hopindex repair`` and ``hopindex rebuild``: jobs that redo part of an index with no
new input, and ``--check``, which shows what they would redo."""

from __future__ import annotations

from collections.abc import Callable

import click

from hopindex.api.cli_context import open_client
from hopindex.api.cli_llm_mode import LLM_MODE_FLAG, llm_mode_option
from hopindex.api.cli_support import handle_errors, print_outstanding, run_and_report
from hopindex.core.models import JobKind

Command = Callable[..., None]


def index_job(check_help: str) -> Callable[[Command], click.Command]:
    """The options of a job over one index with no new input, and the error handling."""
    def decorate(function: Command) -> click.Command:
        for option in reversed((
                click.option("--index", required=True),
                click.option("--check", is_flag=True, help=check_help),
                click.option("--quiet", is_flag=True, help="No progress bar."),
                click.option("--json", "as_json", is_flag=True,
                             help="Print the job record as JSON."),
                click.option("--no-wait", is_flag=True,
                             help="With workers: print the job id and return without "
                                  "waiting. Without: exit 75 at once, instead of waiting, "
                                  "when another job of the index has not ended."),
                llm_mode_option)):
            function = option(function)
        return click.command()(handle_errors(function))
    return decorate


@index_job("Only show the index's status and what it is missing; redo nothing.")
def repair(index: str, check: bool, quiet: bool, as_json: bool, no_wait: bool,
           llm_mode: str | None) -> None:
    """Redo INDEX's outstanding work, with no new input: documents not fully indexed
    (a failed or cancelled job's) and items that failed for good (a phase's groups).

    Behind another unfinished job of the index it waits for that job to end (saying
    which), or with --no-wait exits 75. Exits 3 when some items fail again (they stay
    outstanding; the job says why), 66 when there is no such index.
    """
    _run_job(index, JobKind.REPAIR, check=check, quiet=quiet, as_json=as_json,
             no_wait=no_wait, llm_mode=llm_mode)


@index_job("Only show the index's status and how stale its trees are; build nothing.")
def rebuild(index: str, check: bool, quiet: bool, as_json: bool, no_wait: bool,
            llm_mode: str | None) -> None:
    """Build INDEX's trees again (the levels phases its method builds only on request)
    over its documents as they are now, with no new input.

    Jobs that change documents leave such a tree stale; `--check` shows how stale.
    Exits 3 when some items fail (they stay outstanding; the job says why), 65 when the
    index's method builds nothing on request, 66 when there is no such index; waits
    behind another unfinished job of the index, or exits 75 with --no-wait.
    """
    _run_job(index, JobKind.REBUILD, check=check, quiet=quiet, as_json=as_json,
             no_wait=no_wait, llm_mode=llm_mode)


def _run_job(index: str, kind: JobKind, *, check: bool, quiet: bool, as_json: bool,
             no_wait: bool, llm_mode: str | None) -> None:
    """Show the index's status (``check``), or submit the job (in ``llm_mode``: None,
    the index's default) and report it."""
    if check and llm_mode is not None:
        raise click.UsageError(f"{LLM_MODE_FLAG} goes with the job, not with --check")
    with open_client(engines=True) as client:
        if check:
            print_outstanding(index, client.indexes.describe_index(index, verify=True)
                              .as_dict(), as_json=as_json)
            return
        submit = (client.indexes.repair_index if kind is JobKind.REPAIR
                  else client.indexes.rebuild_index)
        run_and_report(client, index,
                       lambda announce: submit(index, wait=not no_wait, llm_mode=llm_mode,
                                               announce=announce),
                       quiet=quiet, as_json=as_json, no_wait=no_wait)
