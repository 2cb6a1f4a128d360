"""How ``hopindex indexes`` prints: the fields of ``client/views.py`` (or the HTTP API's
same answers) as lines, or as JSON. Lines go out unwrapped: names, paths and reasons
must stay whole when the output is piped."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from hopindex.api.budgets import budget_text
from hopindex.api.cli_support import describe_level_build


def when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def print_indexes(found: list[dict[str, Any]], *, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    if not found:
        click.echo("no indexes")
        return
    width = max(len(index["name"]) for index in found)
    for index in found:
        click.echo(f"{index['name']:<{width}}  {index['method']:<12} "
                   f"created {when(index['created_at'])}")


def describe_lines(described: dict[str, Any]) -> list[str]:
    """An index's method, contents and status (``client.views.describe_index`` fields)."""
    outstanding = described["outstanding"]
    units = ", ".join(f"{kind} {n}" for kind, n in described["units"].items())
    failed = ", ".join(f"{phase} {n}" for phase, n in sorted(outstanding["failed"].items()))
    lines = [f"index {described['name']}: {described['status']}",
             f"  method: {described['method']}, created {when(described['created_at'])}"]
    if described["options"]:
        lines.append(f"  options: {json.dumps(described['options'], sort_keys=True)}")
    lines += [f"  documents: {described['documents']}",
              f"  units: {units or 'none'}",
              f"  documents not fully indexed: {outstanding['documents']}; failed items: "
              f"{failed or 'none'}"]
    lines += [f"    {item['phase']} {item['item']}: {item['reason']}"
              for item in outstanding["items"]]
    if described["running_jobs"]:
        lines.append(f"  running jobs: {', '.join(described['running_jobs'])}")
    # A server older than the levels built on request sends none.
    for level in described.get("levels", []):
        lines += [f"  {line}" for line in describe_level_build(level)]
    return lines


def print_described(described: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(described, indent=2))
        return
    for line in describe_lines(described):
        click.echo(line)


def print_deleted(described: dict[str, Any], *, as_json: bool) -> None:
    name, documents = described["name"], described["documents"]
    if as_json:
        click.echo(json.dumps({"name": name, "deleted": True, "documents": documents}))
        return
    click.echo(f"deleted index {name} ({documents} documents)")


def print_budget(view: dict[str, Any], *, as_json: bool) -> None:
    """An index's default LLM budget (``budgets.budget_view`` fields)."""
    if as_json:
        click.echo(json.dumps(view, indent=2))
        return
    name, limits = view["index"], view["budget"]
    if not limits:
        click.echo(f"index {name}: no default LLM budget")
        return
    click.echo(f"index {name}: default LLM budget {budget_text(limits)}")
