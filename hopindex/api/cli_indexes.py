"""``hopindex indexes list|describe|budget|llm-mode|delete``: the indexes that exist,
what one holds and whether it is complete, the default LLM budget and LLM mode of its
jobs, and dropping one; locally or through a server (``--api``), printed alike either
way."""

from __future__ import annotations

import sys
from typing import Any

import click

from hopindex.api.budgets import COST_FLAG, TOKENS_FLAG, limits_from_flags
from hopindex.api.cli_context import open_client
from hopindex.api.cli_errors import USAGE, print_error
from hopindex.api.cli_llm_mode import print_llm_mode
from hopindex.api.cli_support import handle_errors
from hopindex.api.render_indexes import (
    print_budget,
    print_deleted,
    print_described,
    print_indexes,
)
from hopindex.core.llm_modes import CHOICES


@click.group()
def indexes() -> None:
    """The indexes: list them, describe one (documents, units per kind, whether it is
    complete and what it is missing), set the LLM budget and LLM mode of its jobs,
    delete one."""


@indexes.command(name="list")
@click.option("--json", "as_json", is_flag=True,
              help="A JSON array: name, method, created_at, options.")
@handle_errors
def indexes_list(as_json: bool) -> None:
    """List the indexes by name, with the method each is built with."""
    with open_client() as client:
        found = [index.as_dict() for index in client.indexes.list_indexes()]
    print_indexes(sorted(found, key=lambda index: str(index["name"])), as_json=as_json)


@indexes.command(name="describe")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object, the fields of GET /v1/indexes/NAME.")
@click.argument("name")
@handle_errors
def indexes_describe(as_json: bool, name: str) -> None:
    """Show index NAME: its method and options, documents, units per kind, and its
    status (ready, building, partial) with what it is missing: documents not fully
    indexed, items that failed for good, running jobs, stale trees.

    Exits 66 when there is no such index. A partial index still exits 0: `hopindex
    repair --index NAME` redoes what it is missing.
    """
    with open_client() as client:
        described = client.indexes.describe_index(name).as_dict()
    print_described(described, as_json=as_json)


@indexes.command(name="delete")
@click.option("--yes", "-y", is_flag=True, help="Delete without asking.")
@click.option("--json", "as_json", is_flag=True, help="Print the deletion as JSON.")
@click.argument("name")
@handle_errors
def indexes_delete(yes: bool, as_json: bool, name: str) -> None:
    """Delete index NAME and everything in it: documents, units, vectors, keyword
    postings and its jobs. Asks first (on stderr) unless --yes.

    Exits 2 when not confirmed (no answer on a closed stdin counts as no), 66 when
    there is no such index, 75 while one of its jobs is running (cancel it or wait).
    """
    with open_client(engines=True) as client:
        described = client.indexes.describe_index(name).as_dict()
        if not yes:
            confirm_delete(described, as_json=as_json)
        client.indexes.delete_index(name)
    print_deleted(described, as_json=as_json)


@indexes.command(name="budget")
@click.option(TOKENS_FLAG, "max_llm_tokens", default=None, metavar="N",
              help="The token limit (prompt and completion) of each later job.")
@click.option(COST_FLAG, "max_cost", default=None, metavar="X",
              help="The cost limit of each later job, at the prices set "
                   "(HOPINDEX_LLM_PRICE_*).")
@click.option("--clear", is_flag=True, help="Remove the default budget.")
@click.option("--json", "as_json", is_flag=True,
              help='One JSON object, {"index", "budget"}: the fields of GET '
                   "/v1/indexes/NAME/budget.")
@click.argument("name")
@handle_errors
def indexes_budget(max_llm_tokens: str | None, max_cost: str | None, clear: bool,
                   as_json: bool, name: str) -> None:
    """Show index NAME's default LLM budget, or set it with --max-llm-tokens and
    --max-cost: the limits each later job of the index runs with, pausing when its next
    LLM call would pass one (`hopindex jobs resume` continues it).

    Setting replaces the whole default (a limit not given is removed); an ingest's own
    --max-llm-tokens or --max-cost replaces that limit for its job alone. Jobs already
    created keep their budget. Exits 66 when there is no such index.
    """
    limits = limits_from_flags(max_llm_tokens, max_cost)
    if clear and limits.is_limited:
        raise click.UsageError(f"--clear removes the default budget; it takes no "
                               f"{TOKENS_FLAG} or {COST_FLAG}")
    change = clear or limits.is_limited
    with open_client() as client:
        view = (client.indexes.set_budget(name, limits) if change
                else client.indexes.get_budget(name))
    print_budget(view.as_dict(), as_json=as_json)


@indexes.command(name="llm-mode")
@click.option("--clear", is_flag=True, help="Remove the index's default LLM mode.")
@click.option("--json", "as_json", is_flag=True,
              help='One JSON object, {"index", "llm_mode", "effective"}: the fields of GET '
                   "/v1/indexes/NAME/llm-mode.")
@click.argument("name")
@click.argument("mode", required=False, type=click.Choice(CHOICES))
@handle_errors
def indexes_llm_mode(clear: bool, as_json: bool, name: str, mode: str | None) -> None:
    """Show index NAME's default LLM mode, or set it to MODE: how each later job of the
    index (ingest, repair, rebuild) that names none with --llm-mode makes its LLM calls.
    sync: one request at a time; batch: through the provider's Batch API, about half
    the price, results within its completion window.

    Without a default of its own, an index's jobs run in HOPINDEX_LLM_MODE (sync unless
    set). Jobs already created keep their mode. Exits 66 when there is no such index.
    """
    if clear and mode is not None:
        raise click.UsageError("--clear removes the default LLM mode; it takes no MODE")
    with open_client() as client:
        view = (client.indexes.set_llm_mode(name, mode) if clear or mode is not None
                else client.indexes.get_llm_mode(name))
    print_llm_mode(view.as_dict(), as_json=as_json)


def confirm_delete(described: dict[str, Any], *, as_json: bool) -> None:
    """Ask before deleting; exit with the usage code unless the answer is yes."""
    name = described["name"]
    try:
        confirmed = click.confirm(f"Delete index {name!r} and its {described['documents']} "
                                  f"documents (method {described['method']})? This cannot "
                                  "be undone.", default=False, err=True)
    except click.Abort:  # stdin closed or Ctrl-C: nobody said yes
        click.echo(err=True)  # end the prompt's line
        confirmed = False
    if not confirmed:
        print_error(f"index {name!r} not deleted: not confirmed (--yes deletes without "
                    "asking)", USAGE, as_json=as_json)
        sys.exit(USAGE.exit_code)
