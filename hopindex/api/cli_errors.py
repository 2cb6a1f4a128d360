"""How a ``hopindex`` command reports an error: one line on stderr (``error: …``), or
with ``--json`` one JSON object there, ``{"error": {"code", "message", "exit_code",
"field"?}}`` (and what the error's type adds for programs, as the HTTP API does: the
oldest event id kept of ``events_gone``), and the exit code ``exit_codes`` gives it.

Errors are written with ``click.echo``, not rich: rich wraps at the terminal's width
(80 columns when piped), which breaks a message in the middle of a word or a path.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any, NoReturn

import click

from hopindex.api.client.http_wire import RemoteApiError
from hopindex.api.exit_codes import ExitCode, Outcome, outcome_of
from hopindex.core.errors import EventsGoneError, HopindexError, InvalidInputError, NotFoundError
from hopindex.core.redact import redact_text
from hopindex.core.settings import LogLevel

USAGE = Outcome(ExitCode.USAGE, "usage")
INTERNAL = Outcome(ExitCode.INTERNAL, "internal")
JSON_PARAM = "as_json"  # the parameter name of every command's --json flag
_ARGV = "hopindex.argv"  # ctx.meta key: the command line as given


def one_line(message: str) -> str:
    """The message with its line breaks folded: an error is one line of stderr."""
    return " ".join(part.strip() for part in message.splitlines() if part.strip())


def print_error(message: str, outcome: Outcome, *, as_json: bool,
                field: str | None = None, details: dict[str, Any] | None = None) -> None:
    text = one_line(redact_text(message))
    if not as_json:
        click.echo(f"error: {text}", err=True)
        return
    error: dict[str, Any] = {"code": outcome.code, "message": text,
                             "exit_code": int(outcome.exit_code)}
    if field:
        error["field"] = field
    error.update(details or {})
    click.echo(json.dumps({"error": error}), err=True)


def fail(exc: HopindexError, *, as_json: bool) -> NoReturn:
    """Report one of hopindex's own errors and exit with its code."""
    outcome = outcome_of(exc)
    named = InvalidInputError | NotFoundError | EventsGoneError
    field = (exc.where if isinstance(exc, named)
             else exc.field if isinstance(exc, RemoteApiError) else None)
    details = {name: getattr(exc, name, None) for name in type(exc).answer_fields}
    print_error(str(exc), outcome, as_json=as_json, field=field, details=details)
    sys.exit(outcome.exit_code)


def fail_usage(exc: click.ClickException) -> NoReturn:
    """A usage error as JSON (click prints the text form itself, with the usage line)."""
    print_error(exc.format_message(), USAGE, as_json=True)
    sys.exit(exc.exit_code)


def fail_unexpected(exc: Exception, *, as_json: bool) -> NoReturn:
    """An exception of no kind hopindex raises on purpose: a bug, or a library's error
    nothing translated. The traceback a bug report needs comes with
    HOPINDEX_LOG_LEVEL=debug; without it the error stays one line like any other."""
    if _debugging():
        click.echo(redact_text("".join(traceback.format_exception(exc))), err=True, nl=False)
    print_error(f"unexpected {type(exc).__name__}: {exc} (HOPINDEX_LOG_LEVEL=debug prints "
                "the traceback)", INTERNAL, as_json=as_json)
    sys.exit(ExitCode.INTERNAL)


def _debugging() -> bool:
    from hopindex.methods.registry import load_settings

    try:
        return load_settings().log_level is LogLevel.DEBUG
    except HopindexError:
        return False  # the settings themselves are broken: the message is all there is


class ErrorReportingGroup(click.Group):
    """The root command. A usage error of a command given ``--json`` comes out as JSON
    too (click prints it before the command, so its decorator never sees it), and
    Ctrl-C ends with 130 instead of click's 1, which reads as a failure."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_ARGV] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            if not _json_requested(exc, ctx.meta.get(_ARGV, [])):
                raise
            fail_usage(exc)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(ExitCode.INTERRUPTED)


def _json_requested(exc: click.ClickException, argv: list[str]) -> bool:
    """The failed command takes --json and the command line has it (before any ``--``,
    after which every word is an argument)."""
    failed = getattr(exc, "ctx", None)
    if failed is None or not any(p.name == JSON_PARAM for p in failed.command.params):
        return False
    options = argv[:argv.index("--")] if "--" in argv else argv
    return "--json" in options
