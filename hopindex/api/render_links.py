"""How the SAME_AS links of a ``kgbridge`` index print: a table on wide consoles, a few
lines per link on narrow ones, or JSON. Shared by the local and the remote CLI."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from hopindex.api.cli_support import console

SCORES = ("s_link", "s_emb", "s_llm")
# Below this many columns, links print as lines instead of a table: the 32-character
# link id a rejection needs would not fit a table's column.
TABLE_MIN_WIDTH = 140


def end_label(end: dict[str, Any]) -> str:
    """``Ada Lovelace (Analytical Engine)``: the entity's name and its document's title,
    or its id when the document has no title."""
    return f"{end['name']} ({end.get('title') or end['doc_id']})"


def scope_label(index: str, entity: str | None) -> str:
    return f"index {index}" + (f", entity {entity.strip()!r}" if entity is not None else "")


def print_links(found: list[dict[str, Any]], *, as_json: bool, scope: str) -> None:
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    if not found:
        console.print(f"no links ({scope})", markup=False)
        return
    render_links(console, found)


def render_links(out: Console, found: list[dict[str, Any]]) -> None:
    """One row per link on a console wide enough for the table; else a few lines per
    link, since the full link id (what `links reject` takes) leaves a narrower table
    too little room for the names and the reason."""
    if out.width < TABLE_MIN_WIDTH:
        for link in found:
            out.print(f"{link['link_id']}  {link['entity']}", markup=False)
            for line in (f"{end_label(link['a'])} = {end_label(link['b'])}", scores(link),
                         f"reason: {link['reason']}"):
                out.print(Padding(Text(line), (0, 0, 0, 2), expand=False))
        return
    table = Table(box=None)
    table.add_column("link", no_wrap=True, min_width=len(found[0]["link_id"]))
    for name in ("entity", "a", "b"):
        table.add_column(name)
    for name in SCORES:
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("reason", ratio=1)
    for link in found:
        # Text cells: names and reasons come from documents and the model, not markup.
        table.add_row(*(Text(str(value)) for value in (
            link["link_id"], link["entity"], end_label(link["a"]), end_label(link["b"]),
            *(f"{link[name]:.3f}" for name in SCORES), link["reason"])))
    out.print(table)


def scores(link: dict[str, Any]) -> str:
    return "  ".join(f"{name} {link[name]:.3f}" for name in SCORES)


def print_rejected(link: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(link, indent=2))
        return
    if "a" not in link:  # rejected before: the link itself is gone, its rejection stays
        console.print(f"link {link['link_id']} was already rejected by {link['by']} at "
                      f"{link['rejected_at']}", markup=False)
        return
    console.print(f"rejected link {link['link_id']} ({link['entity']}: "
                  f"{end_label(link['a'])} = {end_label(link['b'])}) by {link['by']} at "
                  f"{link['rejected_at']}", markup=False, soft_wrap=True)
