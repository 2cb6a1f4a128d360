"""kgbridge's dry-run planning: the ``graphs`` phase's calls, bounded.

A document whose stored graph is not of its current text gets one extraction request
per chunk, known exactly; then, with gleaning on, one gleaning call per chunk, built
from the extraction's reply (it lists what the extraction found), then at most one
entity-summary call (none when the extraction found no entity) and one
document-summary call, both built from the replies. The ``links`` phase adjudicates
candidate pairs found by embedding the new summaries, which a plan cannot know: it is
not planned.
"""

from __future__ import annotations

from hopindex.core.ids import content_hash
from hopindex.core.models import Document
from hopindex.methods.chunking import chunk_document
from hopindex.methods.kgbridge.graphs import GRAPHS
from hopindex.methods.kgbridge.prompts import extract_request
from hopindex.methods.kgbridge.settings import KgBridgeSettings
from hopindex.methods.plugin import DocumentCalls, PlanContext

SUMMARY_CALLS = 2  # the entity summaries' and the document summary's, per document


def plan_graph_calls(context: PlanContext, document: Document) -> DocumentCalls:
    stored = context.state.get_records(context.index, GRAPHS, [document.doc_id])
    if stored.get(document.doc_id, {}).get("content_hash") == content_hash(document.title,
                                                                            document.text):
        return DocumentCalls()
    settings: KgBridgeSettings = context.settings
    chunks = chunk_document(document)
    gleanings = len(chunks) if settings.gleaning else 0
    return DocumentCalls(requests=[extract_request(document.title, body) for body in chunks],
                         more=gleanings + SUMMARY_CALLS)
