"""CompactRAG's dry-run planning: the ``qa`` phase's calls, exactly.

One request per chunk of a document whose stored record is not of its current text,
with the chunk's spaCy entities and noun chunks, as ``run_qa`` builds them (the NLP
analyser runs; the model does not). The ``pairs`` phase calls no LLM.
"""

from __future__ import annotations

from hopindex.core.ids import content_hash
from hopindex.core.models import Document
from hopindex.methods.chunking import chunk_document
from hopindex.methods.compactrag.prompts import qa_request
from hopindex.methods.plugin import DocumentCalls, PlanContext


def plan_qa_calls(context: PlanContext, document: Document, records: str
                  ) -> DocumentCalls:
    """``records``: the namespace of the documents' QA records (``method.RECORDS``)."""
    stored = context.state.get_records(context.index, records, [document.doc_id])
    if stored.get(document.doc_id, {}).get("hash") == content_hash(document.title,
                                                                    document.text):
        return DocumentCalls()
    bodies = chunk_document(document)
    if not bodies:
        return DocumentCalls()
    analyses = context.nlp.analyze_texts(bodies)
    noun_chunks = context.nlp.find_noun_chunks(bodies)
    return DocumentCalls(requests=[
        qa_request(document.title, body, analysis.entities, nouns)
        for body, analysis, nouns in zip(bodies, analyses, noun_chunks, strict=True)])
