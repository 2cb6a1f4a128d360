"""``hopindex jobs``: list jobs, show or follow one, cancel one, resume one paused on its
LLM budget; locally or through a server (``--api``), printed alike either way."""

from __future__ import annotations

import json

import click

from hopindex.api.budgets import COST_FLAG, TOKENS_FLAG, limits_from_flags
from hopindex.api.cli_context import open_client
from hopindex.api.cli_support import console, err_console, handle_errors, print_jobs, report_job

USAGE = ("expected: jobs [JOB_ID] | jobs cancel JOB_ID | jobs resume JOB_ID "
         f"[{TOKENS_FLAG} N] [{COST_FLAG} X]")


@click.command()
@click.option("--index", default=None, help="Only this index's jobs.")
@click.option("--limit", default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.option("--follow", is_flag=True,
              help="With JOB_ID: show progress until the job ends or pauses.")
@click.option(TOKENS_FLAG, "max_llm_tokens", default=None, metavar="N",
              help="With `jobs resume`: the job's token limit from now on (its total, "
                   "counting what it spent).")
@click.option(COST_FLAG, "max_cost", default=None, metavar="X",
              help="With `jobs resume`: the job's cost limit from now on (its total, in "
                   "the prices' currency, counting what it spent).")
@click.argument("args", nargs=-1)
@handle_errors
def jobs(index: str | None, limit: int, as_json: bool, follow: bool,
         max_llm_tokens: str | None, max_cost: str | None, args: tuple[str, ...]) -> None:
    """List jobs; `jobs JOB_ID` shows one (state, counts per stage, errors, LLM usage and
    budget); `jobs cancel JOB_ID` stops scheduling its work and marks it cancelled;
    `jobs resume JOB_ID` continues a job paused on its LLM budget where it stopped,
    with the limits given replacing the job's own (none given: the same limits).

    With --follow, exits as the command that ran the job would have (3 when some items
    failed, 65, 69 or 75 when it refused its input, failed, was cancelled or paused).
    `jobs resume` exits 65 when the job is not paused, 66 when there is no such job.
    """
    from hopindex.api.progress import follow_job
    from hopindex.api.render import render_job

    action = args[0] if len(args) == 2 else None
    if len(args) > 2 or (len(args) == 2 and action not in ("cancel", "resume")) \
            or args in (("cancel",), ("resume",)):
        raise click.UsageError(USAGE)
    budgeted = max_llm_tokens is not None or max_cost is not None
    if budgeted and action != "resume":
        raise click.UsageError(f"{TOKENS_FLAG} and {COST_FLAG} go with `jobs resume JOB_ID`")
    limits = limits_from_flags(max_llm_tokens, max_cost)
    with open_client() as client:
        if action == "cancel":
            job = client.jobs.cancel_job(args[1])
        elif action == "resume":
            job = client.jobs.resume_job(args[1], limits)
        elif args:
            job = client.jobs.get_job(args[0])
            if follow:
                job = follow_job(client.jobs, job.job_id, err_console, enabled=not as_json)
                report_job(job, as_json=as_json, max_errors=1000)
                return
        else:
            print_jobs(client.jobs.list_jobs(index, limit), as_json=as_json)
            return
        if as_json:
            click.echo(json.dumps(job.view(), indent=2))
        else:
            render_job(console, job, max_errors=1000)
