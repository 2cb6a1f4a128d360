"""How ``hopindex query --stream`` shows a streamed query: the passages as soon as
they are found, then the answer as it is written, then what the query used; with
``--json``, one JSON object per event and line (``{"event": ..., "data": ...}``)."""

from __future__ import annotations

import json

import click
from rich.console import Console

from hopindex.api.cli_support import print_notes
from hopindex.api.client.query_stream import QueryEvent, QueryEventType, QueryStream
from hopindex.api.render import llm_line, render_passages, render_trace
from hopindex.methods.base import QueryResult


def print_stream(console: Console, events: QueryStream, *, as_json: bool, trace: bool,
                 full: bool = False) -> QueryResult | None:
    """Print each event as it comes; the query's result (None if it never came)."""
    with events:
        if as_json:
            return _print_lines(events)
        return _print_text(console, events, trace=trace, full=full)


def _print_lines(events: QueryStream) -> QueryResult | None:
    result = None
    for event in events:
        click.echo(json.dumps({"event": event.type.value, "data": event.as_dict()}))
        result = event.result or result
    return result


def _print_text(console: Console, events: QueryStream, *, trace: bool,
                full: bool) -> QueryResult | None:
    streamed: list[str] = []
    for event in events:
        if event.type is QueryEventType.PASSAGES:
            render_passages(console, event.passages, full=full)
        elif event.type is QueryEventType.ANSWER_DELTA:
            if not streamed:
                click.echo("  answer: ", nl=False)
            streamed.append(event.text)
            click.echo(event.text, nl=False)  # click flushes each write to a terminal
        elif event.result is not None:
            _finish(console, event, "".join(streamed), trace=trace)
            return event.result
    return None


def _finish(console: Console, event: QueryEvent, streamed: str, *, trace: bool) -> None:
    result = event.result
    assert result is not None  # done and degraded events carry it
    if streamed:
        click.echo("")
    # The answer that stands differs from the text shown when markers were renumbered
    # (answer=cited) or the answer step failed part way: say which stands.
    if streamed and result.answer != streamed.strip():
        shown = result.answer if result.answer is not None else "(none: see the note below)"
        console.print(f"  answer, as it stands: {shown}", markup=False)
    if result.answer is not None or streamed:
        console.print(llm_line(result.usage), markup=False)
    console.print(f"  ({result.method}, {result.latency_s * 1000:.1f} ms)", markup=False)
    if trace:
        render_trace(console, result)
    print_notes(result)
