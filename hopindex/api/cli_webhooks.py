"""``hopindex webhooks add|list|remove``: the URLs that receive an index's events,
locally or through a server (``--api``), printed alike either way."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from hopindex.api.cli_context import open_service, remote_commands
from hopindex.api.cli_support import handle_errors
from hopindex.core.errors import NotFoundError
from hopindex.core.redact import redact_url

if TYPE_CHECKING:
    from hopindex.core.events import Webhook

# What a webhook shows, as the HTTP API shows it; the secret only when it is made.
SHOWN = ("id", "index", "url", "created_at", "allow_private")
# What `webhooks add` prints: the new webhook with its secret.
CREATED = ("id", "index", "url", "secret")


def webhook_view(hook: Webhook) -> dict[str, Any]:
    return {"id": hook.webhook_id, "index": hook.index, "url": redact_url(hook.url),
            "created_at": hook.created_at, "allow_private": hook.allow_private}


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
    from hopindex.api.events import register_webhook
    from hopindex.core.ids import validate_index_name

    validate_index_name(index)
    if (remote := remote_commands()) is not None:
        added = remote.client.add_webhook(index, url, secret)
    else:
        with open_service() as service:
            hook = register_webhook(service.backends.events, index, url, secret,
                                    allow_private=service.settings.webhook_allow_private)
        added = {**webhook_view(hook), "secret": hook.secret}
    click.echo(json.dumps({key: added[key] for key in CREATED}, indent=2))


@webhooks.command(name="list")
@click.option("--index", default=None, help="Only this index's webhooks.")
@click.option("--json", "as_json", is_flag=True, help="A JSON array of the webhooks.")
@handle_errors
def webhooks_list(index: str | None, as_json: bool) -> None:
    """List webhooks: id, index and URL (credentials in it redacted; never the secret),
    and whether each may reach private addresses."""
    if (remote := remote_commands()) is not None:
        found = [{key: hook[key] for key in SHOWN if key in hook}
                 for hook in remote.client.list_webhooks(index)]
    else:
        with open_service() as service:
            found = [webhook_view(hook)
                     for hook in service.backends.events.list_webhooks(index)]
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
    if (remote := remote_commands()) is not None:
        remote.client.remove_webhook(webhook_id)
    else:
        with open_service() as service:
            if not service.backends.events.delete_webhook(webhook_id):
                raise NotFoundError(f"no webhook {webhook_id!r}")
    if as_json:
        click.echo(json.dumps({"id": webhook_id, "removed": True}))
    else:
        click.echo(f"removed webhook {webhook_id}")
