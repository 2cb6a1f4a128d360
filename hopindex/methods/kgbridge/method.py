"""``kgbridge`` as an index method: per-document graphs, then SAME_AS links.

1. ``graphs`` (documents, ``stage1`` queue): passages, one extraction call per chunk
   (and one gleaning call, unless ``HOPINDEX_KGBRIDGE_GLEANING`` is off), one
   entity-summary call and one document-summary call per document; the graph is
   the document's record and its entity keys its mentions.
2. ``links`` (groups of namespace ``kgbridge.links``, ``stage2`` queue): per entity
   name found in several documents, one adjudication call per candidate pair; the
   links are records, no unit.
"""

from __future__ import annotations

from collections.abc import Sequence

from hopindex.core.models import Document, UnitKind
from hopindex.methods.kgbridge.graphs import GRAPHS, LINKS, METHOD, run_graphs
from hopindex.methods.kgbridge.links import build_links
from hopindex.methods.kgbridge.planning import plan_graph_calls
from hopindex.methods.kgbridge.settings import KgBridgeSettings
from hopindex.methods.plugin import (
    CallBound,
    DocumentCalls,
    DocumentsPhase,
    Forgotten,
    GroupsPhase,
    LlmUse,
    Phase,
    PhaseContext,
    PlanContext,
)

__all__ = ["KgBridgeIndexMethod", "KgBridgeSettings"]


class KgBridgeIndexMethod:
    name = METHOD
    llm_use = LlmUse.REQUIRED
    settings_type = KgBridgeSettings
    writes = frozenset({UnitKind.PASSAGE, UnitKind.ENTITY_SUMMARY, UnitKind.DOC_SUMMARY})
    default_queries = ("kgbridge", "naive")
    phases: tuple[Phase, ...] = (
        DocumentsPhase(name="graphs", run=run_graphs,
                       writes=frozenset({UnitKind.PASSAGE, UnitKind.ENTITY_SUMMARY,
                                         UnitKind.DOC_SUMMARY})),
        GroupsPhase(name="links", namespace=LINKS, build=build_links),
    )

    def forget_documents(self, context: PhaseContext, doc_ids: Sequence[str]) -> Forgotten:
        """Drop the documents' graphs and mentions; the names they held are adjudicated
        again, so their links go with them."""
        state, index = context.state, context.index
        graphs = state.get_records(index, GRAPHS, list(doc_ids))
        touched = {str(e["key"]) for g in graphs.values() for e in g.get("entities", [])}
        touched |= state.delete_mentions(index, doc_ids)
        state.delete_records(index, list(doc_ids), namespace=GRAPHS)
        return Forgotten(touched={LINKS: touched})

    def plan_document_calls(self, context: PlanContext, document: Document
                            ) -> DocumentCalls | None:
        return plan_graph_calls(context, document) if context.phase == f"{METHOD}.graphs" \
            else None

    def bound_group_calls(self, context: PlanContext, documents: Sequence[Document]
                          ) -> CallBound | None:
        return None  # the candidate pairs come from the new summaries' vectors
