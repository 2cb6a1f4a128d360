"""The commands built from the operations methods register (``hopindex <group> <verb>``):
their options, what they send the client, how they print, and how they exit. The
client is a stand-in here; tests/api/test_links.py runs kgbridge's for real."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any

import click
import pytest
from click.testing import CliRunner

from hopindex.api import cli_context
from hopindex.api.cli import main
from hopindex.api.cli_operations import operation_groups
from hopindex.api.exit_codes import ExitCode
from hopindex.backends.protocols import StateStore
from hopindex.core.errors import InvalidInputError, NotFoundError
from hopindex.methods import registry
from hopindex.methods.operations import MethodOperation, OperationAccess, OperationParam
from hopindex.methods.plugin import MethodRegistry


def _never(state: StateStore, index: str, params: Mapping[str, str]) -> Any:
    raise AssertionError("the stand-in client runs operations, not the command")


def _render(value: Any, params: Mapping[str, str]) -> str:
    return f"{value['count']} notes tagged {params.get('tag', '-')}"


def _default_who() -> str:
    return "default-user"


COUNT = MethodOperation(
    method="notes", name="notes.count", summary="Count the notes.",
    access=OperationAccess.READ, run=_never, render_text=_render,
    params=(OperationParam(name="tag", help="Only this tag's.", metavar="TAG"),))
ARCHIVE = MethodOperation(
    method="notes", name="notes.archive", summary="Archive a note.",
    access=OperationAccess.WRITE, run=_never,
    params=(OperationParam(name="note_id", help="The note.", required=True, flag="--note",
                           metavar="NOTE_ID"),
            OperationParam(name="who", help="Who archives it.", required=True,
                           default=_default_who)))
# A group named as one of the CLI's own commands: never built.
SHADOW = MethodOperation(method="notes", name="jobs.wipe", summary="Wipe.",
                         access=OperationAccess.WRITE, run=_never)


class StandInClient:
    """What ``open_client`` gives a command: records each call, answers ``answer`` (or
    raises it)."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str, dict[str, str]]] = []
        self.closed = False

    @property
    def operations(self) -> StandInClient:
        return self

    def run_operation(self, index: str, name: str, params: Mapping[str, str]) -> Any:
        self.calls.append((index, name, dict(params)))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    def __enter__(self) -> StandInClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.closed = True


@pytest.fixture
def notes(monkeypatch: pytest.MonkeyPatch) -> Iterator[click.Group]:
    """A CLI whose registry holds the notes plug-in's operations alone."""
    found = MethodRegistry()
    for op in (COUNT, ARCHIVE, SHADOW):
        found.add_operation(op)
    monkeypatch.setattr(registry, "_registry", found)
    root = click.Group(name="hopindex", commands={"jobs": click.Group(name="jobs")})
    for group in operation_groups(taken=root.commands):
        root.add_command(group)
    yield root


def stand_in(monkeypatch: pytest.MonkeyPatch, answer: Any) -> StandInClient:
    client = StandInClient(answer)
    monkeypatch.setattr(cli_context, "open_client", lambda **_: client)
    return client


def test_each_operation_is_a_command_of_its_group(notes: click.Group) -> None:
    """One group per operation group (none over a built-in command), one command per
    verb with --index, each parameter's option and metavar (required only when it has
    no default), and --json."""
    assert sorted(notes.commands) == ["jobs", "notes"]
    group = notes.commands["notes"]
    assert isinstance(group, click.Group)
    assert sorted(group.commands) == ["archive", "count"]
    assert "wipe" not in notes.commands["jobs"].commands  # type: ignore[attr-defined]
    options = {o.opts[0]: o for o in group.commands["archive"].params
               if isinstance(o, click.Option)}
    assert list(options) == ["--index", "--note", "--who", "--json"]
    assert options["--index"].required and options["--note"].required
    assert options["--note"].metavar == "NOTE_ID"
    assert not options["--who"].required  # filled in by its default
    shown = CliRunner().invoke(notes, ["notes", "archive", "--help"])
    assert "Archive a note." in shown.output and "--note NOTE_ID" in shown.output
    assert "not built with notes" in shown.output


def test_a_command_sends_its_options_and_prints_the_answer(
        notes: click.Group, monkeypatch: pytest.MonkeyPatch) -> None:
    """The options given are the parameters sent, an absent optional one is left out;
    the answer prints as the operation renders it, as JSON with --json, and as
    indented JSON when the operation has no rendering."""
    client = stand_in(monkeypatch, {"count": 3})
    cli = CliRunner()
    shown = cli.invoke(notes, ["notes", "count", "--index", "mine", "--tag", "red"])
    assert shown.exit_code == 0, shown.output
    assert shown.output == "3 notes tagged red\n"
    bare = cli.invoke(notes, ["notes", "count", "--index", "mine"])
    assert bare.output == "3 notes tagged -\n"
    as_json = cli.invoke(notes, ["notes", "count", "--index", "mine", "--json"])
    assert json.loads(as_json.output) == {"count": 3}
    assert client.calls == [("mine", "notes.count", {"tag": "red"}),
                            ("mine", "notes.count", {}), ("mine", "notes.count", {})]
    assert client.closed
    archived = cli.invoke(notes, ["notes", "archive", "--index", "mine", "--note", "n1"])
    assert archived.exit_code == 0, archived.output
    assert json.loads(archived.output) == {"count": 3}


def test_a_default_is_computed_where_the_command_runs(
        notes: click.Group, monkeypatch: pytest.MonkeyPatch) -> None:
    """A parameter left out takes its default, computed here; one given is sent as it
    is; a required one without a default is click's usage error."""
    client = stand_in(monkeypatch, {"archived": True})
    cli = CliRunner()
    cli.invoke(notes, ["notes", "archive", "--index", "mine", "--note", "n1"])
    cli.invoke(notes, ["notes", "archive", "--index", "mine", "--note", "n1", "--who", "Ada"])
    assert [call[2] for call in client.calls] == [{"note_id": "n1", "who": "default-user"},
                                                  {"note_id": "n1", "who": "Ada"}]
    missing = cli.invoke(notes, ["notes", "archive", "--index", "mine"])
    assert missing.exit_code == ExitCode.USAGE and "--note" in missing.output


@pytest.mark.parametrize(("error", "code"), [
    (InvalidInputError("index 'theirs' is built with 'naive', which has no operation",
                       where="method"), ExitCode.DATA_ERROR),
    (NotFoundError("no index 'nothing'"), ExitCode.NOT_FOUND),
])
def test_a_refusal_exits_with_its_code(notes: click.Group, monkeypatch: pytest.MonkeyPatch,
                                       error: Exception, code: ExitCode) -> None:
    """The client's refusal ends the command with its exit code and reason, as text or,
    with --json, as a JSON error."""
    stand_in(monkeypatch, error)
    refused = CliRunner().invoke(notes, ["notes", "count", "--index", "x"])
    assert refused.exit_code == code, refused.output
    assert str(error).split(": ", 1)[-1] in refused.output
    as_json = CliRunner().invoke(notes, ["notes", "count", "--index", "x", "--json"])
    assert as_json.exit_code == code


def test_the_cli_has_the_links_commands_of_kgbridge() -> None:
    """`hopindex links list|reject` come from kgbridge's operations, with the options
    they always had."""
    links = main.commands["links"]
    assert isinstance(links, click.Group)
    assert sorted(links.commands) == ["list", "reject"]
    options = [o.opts[0] for o in links.commands["reject"].params if isinstance(o, click.Option)]
    assert options == ["--index", "--link", "--by", "--json"]
    shown = CliRunner().invoke(main, ["links", "reject", "--help"])
    assert "--link LINK_ID" in shown.output and "--by NAME" in shown.output
