"""Entity bridges, shared by the methods that build them (``extractive``, ``indexrag``).

A bridge entity is named by at least two documents and at most ``tau`` (IndexRAG's
window). Each bridge is a group of the ``bridge`` namespace: its key is the
entity, its members the documents its units cite. These functions find the bridges
of a set of entities, and what a document's new mentions, or its deletion, touch.
"""

from __future__ import annotations

from collections.abc import Sequence

from hopindex.backends.protocols import StateStore
from hopindex.core.models import EntityMention, MentionSource
from hopindex.methods.plugin import Forgotten, PhaseContext

BRIDGES = "bridge"
# Titles a delete left naming no document: documents that named them are re-linked.
DROPPED_TITLES = "dropped_titles"


def is_bridge(document_frequency: int, tau: int) -> bool:
    """IndexRAG's window: shared by at least two documents, at most tau."""
    return 2 <= document_frequency <= tau


def bridge_documents(state: StateStore, index: str, entities: Sequence[str], tau: int
                     ) -> tuple[list[str], dict[str, list[str]]]:
    """The entities inside the df window, and the documents mentioning each."""
    mentions = state.mentions_of_entities(index, entities)
    doc_ids_of = {e: sorted({m.doc_id for m in mentions.get(e, [])}) for e in entities}
    bridged = [e for e in entities if is_bridge(len(doc_ids_of[e]), tau)]
    return bridged, doc_ids_of


def replace_document_mentions(context: PhaseContext, doc_id: str,
                              mentions: Sequence[EntityMention],
                              sources: Sequence[MentionSource]) -> set[str]:
    """Store a document's mentions from ``sources``; returns the entities to rebuild.

    Every bridge quoting this document may quote changed text, so each is rebuilt,
    and so is every entity it names: the document runs this phase only because its
    text changed, so this costs nothing extra, and it keeps a redelivered task
    (whose first run already wrote the mentions) touching the same set.
    """
    state = context.state
    touched = state.groups_of_documents(context.index, BRIDGES, [doc_id])
    touched |= state.replace_mentions(context.index, doc_id, mentions, sources)
    touched |= {m.entity for m in mentions}
    return touched


def forget_mentions(context: PhaseContext, doc_ids: Sequence[str]) -> Forgotten:
    """Delete the documents' mentions; the bridges they fed are rebuilt, and titles
    only they held are dropped (other documents' lexicon mentions of them go too)."""
    state, index = context.state, context.index
    held = set(doc_ids)
    lexicon = state.title_lexicon(index)
    own_titles = {e for e, owners in lexicon.items() if set(owners) <= held}
    bridged = state.groups_of_documents(index, BRIDGES, doc_ids)
    # A bridge entity no document holds as its title may be a title whose holder an
    # interrupted delete removed; its lexicon mentions elsewhere must go too.
    own_titles |= {e for e in bridged if e not in lexicon}
    touched = bridged | state.delete_mentions(index, doc_ids)
    remaining = state.mentions_of_entities(index, sorted(own_titles))
    dropped = {e for e in own_titles
               if not any(m.source is MentionSource.TITLE for m in remaining.get(e, []))}
    return Forgotten(touched={BRIDGES: touched | dropped},
                     notes={DROPPED_TITLES: sorted(dropped)} if dropped else {})
