"""Auditing a ``kgbridge`` index's SAME_AS links: list them, reject one by hand.

What the service, and through it the CLI and the HTTP API, calls. Each end of a link
comes with its document's title, so a person can judge the link without looking the
documents up.
"""

from __future__ import annotations

from typing import Any

from hopindex.backends.protocols import IndexInfo, StateStore
from hopindex.core.errors import InvalidInputError
from hopindex.core.text import unstorable_field
from hopindex.methods.kgbridge.graphs import METHOD as KGBRIDGE
from hopindex.methods.kgbridge.links import list_links, reject_link

# Who rejected a link is a name, kept with the rejection for good.
MAX_BY_CHARS = 256
ENDS = ("a", "b")


class NoLinksError(InvalidInputError):
    """The index is built with a method that keeps no SAME_AS links."""


def require_links(info: IndexInfo) -> None:
    if info.method != KGBRIDGE:
        # ``method``, as rebuild's refusal: what is wrong is the index's method.
        raise NoLinksError(f"index {info.name!r} is built with {info.method!r}, which keeps "
                           f"no SAME_AS links (only {KGBRIDGE} indexes do)", where="method")


def _check_text(**fields: str) -> None:
    # A CLI argument may carry undecodable bytes as lone surrogates: refused here, as
    # a question is, rather than failing in the store.
    if (bad := unstorable_field(fields.items())) is not None:
        raise InvalidInputError(bad.reason, where=bad.field)


def links_of(state: StateStore, info: IndexInfo, entity: str | None) -> list[dict[str, Any]]:
    """The index's links, of one entity name or all, each end with its document's title."""
    require_links(info)
    if entity is not None:
        _check_text(entity=entity)
        if not entity.strip():
            raise InvalidInputError("give an entity name, or leave it out for every link",
                                    where="entity")
    return with_titles(state, info.name, list_links(state, info.name, entity))


def reject(state: StateStore, info: IndexInfo, link_id: str, by: str) -> dict[str, Any]:
    """Reject one link for good (idempotent: the first rejection stands)."""
    require_links(info)
    _check_text(link_id=link_id, by=by)
    if len(by) > MAX_BY_CHARS:
        raise InvalidInputError(f"is {len(by):,} characters, over the limit of "
                                f"{MAX_BY_CHARS}", where="by")
    return with_titles(state, info.name, [reject_link(state, info.name, link_id, by)])[0]


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
