"""``hopindex links list`` and ``hopindex links reject``: audit a ``kgbridge`` index's
SAME_AS links and reject the wrong ones by hand."""

from __future__ import annotations

import getpass

import click

from hopindex.api.cli_context import open_service, remote_commands
from hopindex.api.cli_support import handle_errors
from hopindex.api.render_links import print_links, print_rejected, scope_label
from hopindex.core.errors import InvalidInputError


@click.group()
def links() -> None:
    """The SAME_AS links of a kgbridge index (same-name entities of different documents
    found to be one): list them, reject a wrong one for good."""


@links.command(name="list")
@click.option("--index", required=True)
@click.option("--entity", default=None, metavar="NAME",
              help="Only this entity name's links (case and spacing do not matter).")
@click.option("--json", "as_json", is_flag=True, help="A JSON array of the links.")
@handle_errors
def links_list(index: str, entity: str | None, as_json: bool) -> None:
    """List INDEX's links with their scores and the model's reason, by entity.

    Exits 66 when the index does not exist, 65 when it is not built with kgbridge.
    """
    if (remote := remote_commands()) is not None:
        remote.links_list(index, entity, as_json=as_json)
        return
    with open_service() as service:
        print_links(service.list_links(index, entity), as_json=as_json,
                    scope=scope_label(index, entity))


@links.command(name="reject")
@click.option("--index", required=True)
@click.option("--link", "link_id", required=True, metavar="LINK_ID",
              help="The link's id, as `hopindex links list` prints it.")
@click.option("--by", default=None, metavar="NAME",
              help="Who rejects it, kept with the rejection (default: your OS user name).")
@click.option("--json", "as_json", is_flag=True, help="Print the rejected link as JSON.")
@handle_errors
def links_reject(index: str, link_id: str, by: str | None, as_json: bool) -> None:
    """Reject one of INDEX's links: it is gone at once, and later jobs never link or
    adjudicate that pair again. Rejecting it twice keeps the first rejection.

    Exits 66 when the index or the link does not exist, 65 when the index is not
    kgbridge.
    """
    who = by if by is not None else os_user()
    if (remote := remote_commands()) is not None:
        remote.links_reject(index, link_id, who, as_json=as_json)
        return
    with open_service() as service:
        print_rejected(service.reject_link(index, link_id, who), as_json=as_json)


def os_user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in the environment or the user database
        raise InvalidInputError("cannot tell who you are; say it with --by NAME",
                                where="by") from None
