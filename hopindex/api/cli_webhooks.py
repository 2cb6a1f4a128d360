"""``hopindex webhooks add|list|remove``: the URLs that receive an index's events,
locally or through a server (``--api``), printed alike either way."""

from __future__ import annotations

import json

import click

from hopindex.api.cli_context import open_client
from hopindex.api.cli_support import handle_errors

# What a webhook shows, as the HTTP API shows it; the secret only when it is made.
SHOWN = ("id", "index", "url", "created_at", "allow_private")
# What `webhooks add` prints: the new webhook with its secret.
CREATED = ("id", "index", "url", "secret")


@click.group()
def webhooks() -> None:
    """Webhooks that receive an index's events as signed JSON (Standard Webhooks)."""


@webhooks.command(name="add")
@click.option("--index", required=True)
@click.option("--secret", default=None,
              help="Signing key, whsec_ + base64 (default: a random one, printed).")
@click.option("--json", "as_json", is_flag=True,
              help="Errors as JSON too (the webhook always prints as JSON: it holds the "
                   "secret, shown this once).")
@click.argument("url")
@handle_errors
def webhooks_add(index: str, secret: str | None, as_json: bool, url: str) -> None:
    """Deliver INDEX's events to URL."""
    from hopindex.core.ids import validate_index_name

    validate_index_name(index)  # before a server is asked, or the data dir opened
    with open_client() as client:
        added = client.webhooks.add_webhook(index, url, secret).as_dict()
    click.echo(json.dumps({key: added[key] for key in CREATED}, indent=2))


@webhooks.command(name="list")
@click.option("--index", default=None, help="Only this index's webhooks.")
@click.option("--json", "as_json", is_flag=True, help="A JSON array of the webhooks.")
@handle_errors
def webhooks_list(index: str | None, as_json: bool) -> None:
    """List webhooks: id, index and URL (credentials in it redacted; never the secret),
    and whether each may reach private addresses."""
    with open_client() as client:
        found = [{key: value for key, value in hook.as_dict().items() if key in SHOWN}
                 for hook in client.webhooks.list_webhooks(index)]
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    for hook in found:
        # Which webhooks may reach internal addresses: what to remove when private
        # targets are no longer to be allowed (the decision stays with each webhook).
        private = "  (private targets allowed)" if hook.get("allow_private") else ""
        click.echo(f"{hook['id']}  {hook['index']:<16} {hook['url']}{private}")


@webhooks.command(name="remove")
@click.option("--json", "as_json", is_flag=True, help="Print the removal as JSON.")
@click.argument("webhook_id")
@handle_errors
def webhooks_remove(as_json: bool, webhook_id: str) -> None:
    """Stop delivering to a webhook. Exits 66 when there is no such webhook."""
    with open_client() as client:
        client.webhooks.remove_webhook(webhook_id)
    if as_json:
        click.echo(json.dumps({"id": webhook_id, "removed": True}))
    else:
        click.echo(f"removed webhook {webhook_id}")
