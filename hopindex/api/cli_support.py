"""What every ``hopindex`` command shares: consoles, error handling, the printing of
jobs (local and remote commands print alike) and the exit code a job ends a command
with."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Console

from hopindex.api.budgets import budget_text
from hopindex.api.cli_console import CliConsole
from hopindex.api.cli_errors import (
    JSON_PARAM,
    fail,
    fail_unexpected,
    fail_usage,
    print_error,
)
from hopindex.api.exit_codes import ExitCode, Outcome, job_outcome
from hopindex.api.render_batches import waiting_line
from hopindex.api.render_pause import pause_lines, pause_notice, resume_command
from hopindex.core.errors import HopindexError
from hopindex.core.models import Job, JobState, Stage
from hopindex.core.tracing import configure_tracing
from hopindex.core.tracing.spans import command_span

if TYPE_CHECKING:
    from hopindex.api.cli_context import CliClient
    from hopindex.methods.base import QueryResult
    from hopindex.scheduler.writers import Announce

F = TypeVar("F", bound=Callable[..., Any])

# Configured by the root command (``--width``, whether stdout is a terminal).
console = CliConsole()
# Progress bars only: errors go through cli_errors, unwrapped.
err_console = Console(stderr=True)


LONG_RUNNING = frozenset({"serve", "worker", "beat", "mcp"})


def handle_errors(func: F) -> F:
    """Every error a command raises ends it as ``print_error`` says, with its exit code;
    the command's ``--json`` flag (parameter ``as_json``) picks the form."""
    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get(JSON_PARAM))
        try:
            with _traced_command():
                return func(*args, **kwargs)
        except HopindexError as exc:
            fail(exc, as_json=as_json)
        except (click.exceptions.Exit, click.Abort, BrokenPipeError):
            # click's own control flow (--help, a declined prompt), and a reader that
            # stopped reading (`| head`), which click ends quietly.
            raise
        except click.ClickException as exc:
            if not as_json:
                raise
            fail_usage(exc)
        except Exception as exc:
            fail_unexpected(exc, as_json=as_json)

    return wrapper  # type: ignore[return-value]  # wraps keeps the signature


def _traced_command() -> AbstractContextManager[Any]:
    """A command's root span, when tracing is on (``OTEL_*``): what it calls, a server's
    handling of its requests included, is one trace. Not for the commands that run until
    stopped (``serve``, ``worker``, ``beat``, ``mcp``): their requests and tasks are each
    a trace of their own."""
    context = click.get_current_context(silent=True)
    if context is None or context.info_name in LONG_RUNNING:
        return nullcontext()
    configure_tracing()
    return command_span(context.command_path)


def report_job(job: Job, *, as_json: bool, max_errors: int = 20) -> None:
    """Print a finished job and exit with its outcome (``exit_codes.job_outcome``): 3 when
    some documents failed and the rest landed; when none could be used (or a delete
    found none of its ids), or the job failed or was cancelled, also an error on
    stderr saying so."""
    from hopindex.api.render import render_job

    if as_json:
        click.echo(json.dumps(job.view(), indent=2))
    else:
        render_job(console, job, max_errors=max_errors)
    outcome = job_outcome(job)
    if outcome.exit_code not in (ExitCode.OK, ExitCode.PARTIAL):
        print_error(job_failure(job, outcome), outcome, as_json=as_json)
    if outcome.exit_code is not ExitCode.OK:
        sys.exit(outcome.exit_code)


def job_failure(job: Job, outcome: Outcome) -> str:
    if outcome.exit_code is ExitCode.DATA_ERROR:
        return (f"job {job.job_id}: none of the input could be used; the job lists each "
                "record refused with its file, line and field")
    if outcome.exit_code is ExitCode.NOT_FOUND:
        return (f"job {job.job_id}: nothing was deleted: no id names a document of index "
                f"{job.index!r}; the job lists each id")
    if outcome.code == "job_paused":
        return (f"job {job.job_id} paused: {job.reason or 'no reason recorded'}; resume "
                f"with: {resume_command(job)}")
    if outcome.code == "job_waiting_on_provider":
        return (f"job {job.job_id} is {waiting_line(job)}; it goes on by itself once the "
                f"results are in: follow it with `hopindex jobs {job.job_id} --follow`")
    verb = "was cancelled" if outcome.code == "job_cancelled" else "failed"
    return f"job {job.job_id} {verb}: {job.reason or outcome.reason or 'no reason recorded'}"


def run_and_report(client: CliClient, index: str, submit: Callable[[Announce], Job], *,
                   quiet: bool, as_json: bool, no_wait: bool) -> None:
    """Submit a job (``submit`` calls the client with ``wait=not no_wait`` and the
    announcer it is given), show its progress from a side thread while the call waits
    for it, print it and exit with its outcome.

    When this process runs the job (``client.runs_jobs_here``: no broker, no server), a
    pause on the job's LLM budget is announced on stderr (with the command that
    resumes it) while this process waits for the resume, and ``no_wait`` only refuses
    a busy index at once. Otherwise ``no_wait`` prints the job's id and returns, and a
    wait stops at a pause (exit 75), since the job goes on without this process once
    resumed.
    """
    from hopindex.api.progress import PauseWatch, follow_newest_job

    here = client.runs_jobs_here
    detached = no_wait and not here
    show = not (quiet or as_json or detached)
    watch = (PauseWatch(lambda job: announce_pause(job, as_json=as_json),
                        lambda job: announce_resume(job, as_json=as_json))
             if here else None)
    with follow_newest_job(client.jobs, index, err_console, enabled=show, watch=watch):
        job = submit(announcer(as_json=as_json))
    if detached:
        click.echo(json.dumps(job.view(), indent=2) if as_json else job.job_id)
        return
    report_job(job, as_json=as_json)


def announcer(*, as_json: bool) -> Announce:
    """What a job this process runs itself says when it takes its turn on the index
    behind unfinished jobs: which one it waits for, on stderr (``--no-wait`` is refused
    at once instead, exit 75)."""
    def announce(blocking: Job) -> None:
        from hopindex.scheduler.writers import busy_reason

        if as_json:
            click.echo(json.dumps({"event": "job.waiting", "index": blocking.index,
                                   "behind": blocking.job_id,
                                   "behind_state": blocking.state.value}), err=True)
            return
        err_console.print(f"waiting: {busy_reason(blocking.index, blocking)} (--no-wait "
                          "exits instead)", markup=False, soft_wrap=True)

    return announce


def announce_pause(job: Job, *, as_json: bool) -> None:
    """Say on stderr that the job this process runs paused, why, and how to resume it
    (from another shell: this process waits and carries the job on)."""
    if as_json:
        click.echo(json.dumps(pause_notice(job, in_process=True)), err=True)
        return
    err_console.print(f"job {job.job_id} paused: {job.reason or 'LLM budget reached'}",
                      markup=False, soft_wrap=True)
    for line in pause_lines(job)[1:]:
        err_console.print(line, markup=False, soft_wrap=True)
    err_console.print("  this process runs the job: it waits here, and carries the job on "
                      "once it is resumed from another shell", markup=False, soft_wrap=True)


def announce_resume(job: Job, *, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"event": "job.resumed", "job_id": job.job_id,
                               "index": job.index, "state": job.state.value,
                               "budget": job.budget.as_dict()}), err=True)
        return
    err_console.print(f"job {job.job_id} resumed (LLM budget: "
                      f"{budget_text(job.budget.as_dict())})", markup=False, soft_wrap=True)


def print_jobs(found: list[Job], *, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([j.view() for j in found], indent=2))
        return
    for job in found:
        budget = (f" budget: {budget_text(job.budget.as_dict())}"
                  if job.budget.is_limited else "")
        paused = f" paused: {job.reason}" if job.state is JobState.PAUSED else ""
        waiting = f" {line}" if (line := waiting_line(job)) is not None else ""
        console.print(f"{job.job_id}  {job.kind.value:<7} {job.index:<16} "
                      f"{job.state.value:<10} {job.progress()['percent']:5.1f}% "
                      f"{step_progress(job)} errors={len(job.errors)}{budget}{paused}"
                      f"{waiting}", markup=False, soft_wrap=True)


def step_progress(job: Job) -> str:
    """``stage1 6/6 link 6/6 embed 9/9 stage2 2/2``: finished items (done, failed or
    skipped: an unchanged document skipped is work the job is through with) of each
    phase and of embedding, in the order the job met them. Phases go by their own name:
    an index has one method."""
    parts = []
    for name, counts in job.counts.items():
        if name in (Stage.VALIDATE.value, Stage.FINALIZE.value):
            continue
        short = name.split(".", 1)[1] if name in job.phases and "." in name else name
        parts.append(f"{short} {min(counts.finished, counts.total)}/{counts.total}")
    return " ".join(parts)


def print_outstanding(index: str, described: dict[str, Any], *, as_json: bool) -> None:
    """An index's status, what it is missing and how stale its levels phases built on
    request are (``Outstanding.as_dict`` fields)."""
    view = {k: described[k] for k in ("status", "outstanding", "running_jobs")}
    # A server older than the levels built on request sends none.
    view["levels"] = described.get("levels", [])
    if as_json:
        click.echo(json.dumps({"index": index, **view}, indent=2))
        return
    outstanding = view["outstanding"]
    failed = ", ".join(f"{phase} {n}" for phase, n in sorted(outstanding["failed"].items()))
    console.print(f"index {index}: {view['status']}; documents not fully indexed: "
                  f"{outstanding['documents']}; failed items: {failed or 'none'}", markup=False,
                  soft_wrap=True)
    for item in outstanding["items"]:
        console.print(f"  {item['phase']} {item['item']}: {item['reason']}", markup=False,
                      soft_wrap=True)
    if view["running_jobs"]:
        console.print(f"running jobs: {', '.join(view['running_jobs'])}", markup=False,
                      soft_wrap=True)
    for level in view["levels"]:
        for line in describe_level_build(level):
            console.print(line, markup=False, soft_wrap=True)


def describe_level_build(level: dict[str, Any]) -> list[str]:
    """Lines on a levels phase built on request (``LevelStatus.as_dict``)."""
    built = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(level["built_at"]))
             if level["built_at"] is not None else "never")
    automatic = f"{level['rebuild_share']:.0%}" if level["rebuild_share"] else "never"
    lines = [f"{level['phase']}: {level['state']}, built {built}",
             f"  changed since: {level['changed_since_build']} documents "
             f"({level['changed_share']:.0%}); rebuilt automatically at: {automatic}"]
    if level["stale"] and level["state"] != "building":
        lines.append("  `hopindex rebuild --index INDEX` builds it again")
    return lines


def print_result(result: QueryResult, *, as_json: bool, trace: bool,
                 full: bool = False) -> None:
    """A query's answer: JSON, or passages with provenance (each shortened, or whole
    with ``full``) and the decision trace, with a note on stderr when the query
    degraded (its answer lost to a failed LLM step, say) and a line there for each of
    its warnings (an index partial or building): still a result, so the exit code is
    0."""
    from hopindex.api.render import render_result, render_trace

    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2))
        return
    render_result(console, result, full=full)
    if trace:
        render_trace(console, result)
    print_notes(result)


def print_notes(result: QueryResult) -> None:
    """On stderr, a line for each of the result's warnings and one when it degraded."""
    from hopindex.api.render import degraded_note, warning_lines

    for line in warning_lines(result):
        click.echo(line, err=True)
    if (note := degraded_note(result)) is not None:
        click.echo(note, err=True)
