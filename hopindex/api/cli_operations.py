"""``hopindex <group> <verb>``: the admin operations index methods register (``hopindex
links list`` and ``hopindex links reject`` of a ``kgbridge`` index), one command each.

The commands are built from the registry when the CLI is imported, so a method (a
plug-in's too) adds commands without this module naming it. Each runs its operation
through the client, in this process or on the server ``--api`` names, as every other
command does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import click

from hopindex.api.cli_support import handle_errors
from hopindex.methods.operations import MethodOperation, OperationParam
from hopindex.methods.registry import list_operations

# The options every operation command has; a parameter may not take them.
INDEX_OPTION = "--index"
JSON_OPTION = "--json"


def _param_key(param: OperationParam) -> str:
    # Prefixed, so a parameter cannot shadow the command's own ``index`` or ``as_json``.
    return f"param_{param.name}"


def _options(params: Iterable[OperationParam]) -> list[OperationParam]:
    """The parameters of operations sharing a name (each method's own), each name once,
    without one whose flag is a command's own option."""
    found: dict[str, OperationParam] = {}
    for param in params:
        if param.option not in (INDEX_OPTION, JSON_OPTION):
            found.setdefault(param.name, param)
    return list(found.values())


def _exits(methods: list[str]) -> str:
    return (f"Exits 66 when the index (or what the operation names in it) does not exist, "
            f"65 when the index is not built with {' or '.join(methods)} or a parameter is "
            "refused.")


def run_command(name: str, index: str, given: Mapping[str, str | None],
                params: list[OperationParam],
                render: Callable[[Any, Mapping[str, str]], str] | None,
                *, as_json: bool) -> None:
    """Run operation ``name`` on ``index`` with the options given (an option left out
    takes its parameter's default, computed here) and print its answer."""
    # Imported here: the client opens the runtime, which `hopindex --help` never needs.
    from hopindex.api.cli_context import open_client

    sent: dict[str, str] = {}
    for param in params:
        value = given.get(param.name)
        if value is None and param.default is not None:
            value = param.default()
        if value is not None:
            sent[param.name] = value
    with open_client() as client:
        value = client.operations.run_operation(index, name, sent)
    if as_json:
        click.echo(json.dumps(value, indent=2))
    elif render is not None:
        click.echo(render(value, sent))
    else:
        click.echo(json.dumps(value, indent=2))


def operation_command(name: str, operations: list[MethodOperation]) -> click.Command:
    """The command of operation ``name``, which ``operations`` (one per method that has
    it) share: the first one's summary and rendering, every one's parameters."""
    first = operations[0]
    params = _options(p for op in operations for p in op.params)
    methods = sorted({op.method for op in operations})

    @handle_errors
    def callback(index: str, as_json: bool, **options: str | None) -> None:
        given = {p.name: options.get(_param_key(p)) for p in params}
        run_command(name, index, given, params, first.render_text, as_json=as_json)

    command = click.Command(
        name=first.verb, callback=callback, help=f"{first.summary}\n\n{_exits(methods)}",
        params=[click.Option([INDEX_OPTION], required=True, help="The index.")])
    for param in params:
        # A parameter with a default is filled in by run_command, not required of the
        # user; one without is required here, as the operation requires it.
        command.params.append(click.Option(
            [param.option, _param_key(param)], metavar=param.metavar,
            required=param.required and param.default is None, help=param.help))
    command.params.append(click.Option([JSON_OPTION, "as_json"], is_flag=True,
                                       help="Print the operation's answer as JSON."))
    return command


def operation_groups(taken: Iterable[str] = ()) -> list[click.Group]:
    """A command group per operation group the methods register, by name, none whose
    name is in ``taken`` (the CLI's own commands come first)."""
    by_group: dict[str, dict[str, list[MethodOperation]]] = {}
    for operation in list_operations():
        by_group.setdefault(operation.group, {}).setdefault(operation.name, []).append(
            operation)
    reserved = set(taken)
    groups: list[click.Group] = []
    for group_name, named in sorted(by_group.items()):
        if group_name in reserved:
            continue
        methods = sorted({op.method for ops in named.values() for op in ops})
        group = click.Group(name=group_name, help=(
            f"The {group_name} of {' and '.join(methods)} indexes: "
            f"{', '.join(op.split('.', 1)[1] for op in sorted(named))}."))
        for name, operations in sorted(named.items()):
            group.add_command(operation_command(name, operations))
        groups.append(group)
    return groups
