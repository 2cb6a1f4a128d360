"""SiReRAG's dry-run planning: the propositions phase's calls.

Per chunk of a document whose stored propositions are not of its current text and
extraction mode, as ``run_propositions`` builds them: the one proposition request, or
the paper's first step (the coreference rewrite) with two more calls built from its
reply. The aggregates and the trees call the model on what earlier replies produced,
so a plan cannot say what they send.
"""

from __future__ import annotations

from hopindex.core.models import Document
from hopindex.methods.chunking import chunk_document
from hopindex.methods.plugin import DocumentCalls, PlanContext
from hopindex.methods.sirerag.extraction import CALLS_PER_CHUNK, Extraction
from hopindex.methods.sirerag.paper_prompts import paragraph, rewrite_request
from hopindex.methods.sirerag.prompts import propositions_request
from hopindex.methods.sirerag.propositions import PROPOSITIONS, is_current


def plan_proposition_calls(context: PlanContext, document: Document) -> DocumentCalls:
    mode = Extraction(context.settings.extraction)
    stored = context.state.get_records(context.index, PROPOSITIONS, [document.doc_id])
    if is_current(stored.get(document.doc_id), document, mode):
        return DocumentCalls()
    bodies = chunk_document(document)
    if mode is Extraction.ONE_CALL:
        return DocumentCalls(requests=[propositions_request(document.title, body)
                                       for body in bodies])
    texts = [paragraph(document.title, body) for body in bodies]
    return DocumentCalls(
        requests=[rewrite_request(texts[n - 1] if n else "", text)
                  for n, text in enumerate(texts)],
        more=(CALLS_PER_CHUNK[mode] - 1) * len(bodies))
