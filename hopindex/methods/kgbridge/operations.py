"""The admin operations of a ``kgbridge`` index: audit its SAME_AS links and reject the
wrong ones by hand (``links.list``, ``links.reject``).

Registered with the method, so every front door reaches them through the client
(``hopindex links list|reject``, ``/v1/indexes/{name}/operations/links.list``) without
naming this method. Each end of a link comes with its document's title, so a person can
judge the link without looking the documents up.
"""

from __future__ import annotations

import getpass
from collections.abc import Mapping
from typing import Any

from hopindex.backends.protocols import StateStore
from hopindex.core.errors import InvalidInputError
from hopindex.methods.kgbridge.graphs import METHOD
from hopindex.methods.kgbridge.links import list_links, reject_link
from hopindex.methods.operations import MethodOperation, OperationAccess, OperationParam

# Who rejected a link is a name, kept with the rejection for good.
MAX_BY_CHARS = 256
ENDS = ("a", "b")
SCORES = ("s_link", "s_emb", "s_llm")


def os_user() -> str:
    """The default of ``by`` where a person runs the CLI: their login name."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in the environment or the user database
        raise InvalidInputError("cannot tell who you are; say it with --by NAME",
                                where="by") from None


def with_titles(state: StateStore, index: str, links: list[dict[str, Any]]
                ) -> list[dict[str, Any]]:
    """``links`` with a ``title`` on each end (its document's; "" when it has none or
    is gone). A link rejected earlier carries no ends and is left as it is."""
    doc_ids = sorted({link[end]["doc_id"] for link in links for end in ENDS if end in link})
    titles = ({d.doc_id: d.title for d in state.get_documents(index, doc_ids)}
              if doc_ids else {})
    return [{**link, **{end: {**link[end], "title": titles.get(link[end]["doc_id"], "")}
                        for end in ENDS if end in link}}
            for link in links]


def run_list(state: StateStore, index: str, params: Mapping[str, str]) -> list[dict[str, Any]]:
    """The index's links, of one entity name or all, each end with its document's title."""
    entity = params.get("entity")
    if entity is not None and not entity.strip():
        raise InvalidInputError("give an entity name, or leave it out for every link",
                                where="entity")
    return with_titles(state, index, list_links(state, index, entity))


def run_reject(state: StateStore, index: str, params: Mapping[str, str]) -> dict[str, Any]:
    """Reject one link for good (idempotent: the first rejection stands)."""
    rejected = reject_link(state, index, params["link_id"], params["by"])
    return with_titles(state, index, [rejected])[0]


def end_label(end: Mapping[str, Any]) -> str:
    """``Ada Lovelace (Analytical Engine)``: the entity's name and its document's title,
    or its id when the document has no title."""
    return f"{end['name']} ({end.get('title') or end['doc_id']})"


def render_links(found: list[dict[str, Any]], params: Mapping[str, str]) -> str:
    """One row per link in aligned columns, under a header; the full link id, which
    ``links reject`` takes, is never cut. Names and reasons are printed as they are."""
    entity = params.get("entity")
    if not found:
        return "no links" + (f" (entity {entity.strip()!r})" if entity is not None else "")
    header = ("link", "entity", "a", "b", *SCORES, "reason")
    rows = [header, *((str(link["link_id"]), str(link["entity"]), end_label(link["a"]),
                       end_label(link["b"]), *(f"{link[name]:.3f}" for name in SCORES),
                       str(link["reason"])) for link in found)]
    # The reason, last, is as long as it is: only the columns before it are padded.
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    right = {header.index(name) for name in SCORES}
    lines = []
    for row in rows:
        cells = [cell.rjust(width) if i in right else cell.ljust(width)
                 for i, (cell, width) in enumerate(zip(row, widths, strict=False))]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def render_rejected(link: Mapping[str, Any], params: Mapping[str, str]) -> str:
    if "a" not in link:  # rejected before: the link itself is gone, its rejection stays
        return (f"link {link['link_id']} was already rejected by {link['by']} at "
                f"{link['rejected_at']}")
    return (f"rejected link {link['link_id']} ({link['entity']}: {end_label(link['a'])} = "
            f"{end_label(link['b'])}) by {link['by']} at {link['rejected_at']}")


LIST_LINKS = MethodOperation(
    method=METHOD, name="links.list", access=OperationAccess.READ, run=run_list,
    summary="List the index's SAME_AS links (same-name entities of different documents "
            "found to be one) with their scores and the model's reason, by entity.",
    params=(OperationParam(
        name="entity", metavar="NAME",
        help="Only this entity name's links (case and spacing do not matter)."),),
    render_text=render_links)

REJECT_LINK = MethodOperation(
    method=METHOD, name="links.reject", access=OperationAccess.WRITE, run=run_reject,
    summary="Reject one of the index's SAME_AS links: it is gone at once, and later jobs "
            "never link or adjudicate that pair again. Rejecting it twice keeps the first "
            "rejection.",
    params=(
        OperationParam(name="link_id", required=True, flag="--link", metavar="LINK_ID",
                       help="The link's id, as `hopindex links list` prints it."),
        OperationParam(name="by", required=True, max_chars=MAX_BY_CHARS, metavar="NAME",
                       default=os_user,
                       help="Who rejects it, kept with the rejection (default: your OS "
                            "user name)."),
    ),
    render_text=render_rejected)

OPERATIONS = (LIST_LINKS, REJECT_LINK)
