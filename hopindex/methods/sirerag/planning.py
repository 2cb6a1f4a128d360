"""SiReRAG's dry-run planning: the propositions phase's calls, exactly.

One request per chunk of a document whose stored propositions are not of its
current text, as ``run_propositions`` builds them. The aggregates and the trees
call the model on what earlier replies produced, so a plan cannot say what they send.
"""

from __future__ import annotations

from hopindex.core.ids import content_hash
from hopindex.core.models import Document
from hopindex.methods.chunking import chunk_document
from hopindex.methods.plugin import DocumentCalls, PlanContext
from hopindex.methods.sirerag.prompts import propositions_request
from hopindex.methods.sirerag.propositions import PROPOSITIONS


def plan_proposition_calls(context: PlanContext, document: Document) -> DocumentCalls:
    stored = context.state.get_records(context.index, PROPOSITIONS, [document.doc_id])
    if stored.get(document.doc_id, {}).get("hash") == content_hash(document.title,
                                                                    document.text):
        return DocumentCalls()
    return DocumentCalls(requests=[propositions_request(document.title, body)
                                   for body in chunk_document(document)])
