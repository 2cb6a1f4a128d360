"""``hopindex repair`` and ``hopindex rebuild``: jobs that redo part of an index with no
new input, and ``--check``, which shows what they would redo."""

from __future__ import annotations

import click

from hopindex.api.cli_context import open_service, remote_commands
from hopindex.api.cli_support import handle_errors, print_outstanding, run_and_report


@click.command()
@click.option("--index", required=True)
@click.option("--check", is_flag=True,
              help="Only show the index's status and what it is missing; redo nothing.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the job record as JSON.")
@click.option("--no-wait", is_flag=True,
              help="With workers: print the job id and return without waiting.")
@handle_errors
def repair(index: str, check: bool, quiet: bool, as_json: bool, no_wait: bool) -> None:
    """Redo INDEX's outstanding work, with no new input: documents not fully indexed
    (a failed or cancelled job's) and items that failed for good (a phase's groups).

    Exits 3 when some items fail again (they stay outstanding; the job says why).
    """

    if (remote := remote_commands()) is not None:
        remote.repair(index, check=check, quiet=quiet, as_json=as_json, no_wait=no_wait)
        return
    with open_service() as service:
        if check:
            print_outstanding(index, service.outstanding(index).as_dict(), as_json=as_json)
            return
        run_and_report(service.backends.state, index, lambda: service.repair_index(index),
                       in_process=not service.runs_on_workers, quiet=quiet, as_json=as_json,
                       no_wait=no_wait)


@click.command()
@click.option("--index", required=True)
@click.option("--check", is_flag=True,
              help="Only show the index's status and how stale its trees are; build nothing.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the job record as JSON.")
@click.option("--no-wait", is_flag=True,
              help="With workers: print the job id and return without waiting.")
@handle_errors
def rebuild(index: str, check: bool, quiet: bool, as_json: bool, no_wait: bool) -> None:
    """Build INDEX's trees again (the levels phases its method builds only on request)
    over its documents as they are now, with no new input.

    Jobs that change documents leave such a tree stale; `--check` shows how stale.
    Exits 2 when the index's method builds nothing on request or a job of the index is
    running, 3 when some items fail (they stay outstanding; the job says why).
    """

    if (remote := remote_commands()) is not None:
        remote.rebuild(index, check=check, quiet=quiet, as_json=as_json, no_wait=no_wait)
        return
    with open_service() as service:
        if check:
            print_outstanding(index, service.outstanding(index).as_dict(), as_json=as_json)
            return
        run_and_report(service.backends.state, index, lambda: service.rebuild_index(index),
                       in_process=not service.runs_on_workers, quiet=quiet, as_json=as_json,
                       no_wait=no_wait)
