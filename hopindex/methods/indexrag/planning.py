"""IndexRAG's dry-run planning: stage 1's calls exactly, stage 2's bounded.

Stage 1 sends one request per document (per chunk of one over the token limit),
built from the document alone, so the plan is the requests themselves. Stage 2
calls once per touched entity shared by 2..tau documents; which entities a new
document names is known only from its stage-1 replies, so the plan bounds the calls
instead (see :func:`bound_stage2_calls`).

On an index's first ingest there is nothing to bound by: the entities come from the
model's replies alone (its free-form entity lists, not spans of the text), and a
stage-1 request caps no reply length, so any number of entities could be shared by
2..tau of the new documents. Stage 2 is then "not planned" rather than given a bound
nothing guarantees.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from hopindex.core.models import Document
from hopindex.methods.bridges import BRIDGES
from hopindex.methods.indexrag.prompts import stage1_request
from hopindex.methods.indexrag.units import stage1_inputs
from hopindex.methods.plugin import CallBound, DocumentCalls, PlanContext


def plan_stage1_calls(document: Document, max_tokens: int) -> DocumentCalls:
    """The requests stage 1 sends for ``document``, as ``extract_documents`` builds them
    (the same ``stage1_inputs``, so the dry run's count is exact)."""
    return DocumentCalls(requests=[stage1_request(document.title, chunk)
                                   for chunk in stage1_inputs(document, max_tokens)])


def bound_stage2_calls(context: PlanContext, documents: Sequence[Document]) -> CallBound:
    """At most one call per entity the job touches: the entities the changed documents
    name now or are quoted for, those that failed earlier (read from the state), and
    what the new replies could add. Those are estimated as the most entities any other
    document of this index names, times the documents ingested: each such mention can
    bring one existing entity named by 1..tau-1 documents into the window, and a new
    entity needs two of them. Without such a document there is nothing to bound by."""
    state, index, tau = context.state, context.index, context.settings.tau
    doc_ids = [d.doc_id for d in documents]
    # Entities an earlier job failed for good are built again by every job.
    failed = {f.item for f in state.list_failed_items(index, context.phase)}
    if not doc_ids:
        return CallBound(max_calls=len(failed), basis=(
            f"no new or changed documents; {len(failed)} entities failed earlier"))
    current = state.mentions_of_documents(index, doc_ids)
    old = {m.entity for ms in current.values() for m in ms}
    old |= state.groups_of_documents(index, BRIDGES, doc_ids)
    old |= failed
    indexed = sorted(set(state.document_hashes(index)) - set(doc_ids))
    per_document = state.mentions_of_documents(index, indexed) if indexed else {}
    named = [{m.entity for m in ms} for ms in per_document.values()]
    most = max((len(entities) for entities in named), default=0)
    if most == 0:
        return CallBound(max_calls=None, basis=(
            f"{len(old)} entities touched through changed documents or failed earlier; "
            "no other document of this index names an entity yet, and the entities the "
            "new documents share come only from their stage-1 replies, whose length "
            "nothing caps: no bound holds before stage 1 runs"))
    frequency = Counter(e for entities in named for e in entities)
    joinable = sum(1 for e, n in frequency.items() if e not in old and 1 <= n < tau)
    mentions = len(doc_ids) * most
    joined = min(mentions, joinable)
    return CallBound(max_calls=len(old) + joined + (mentions - joined) // 2, basis=(
        f"{len(old)} entities the changed documents name or are quoted for or that failed "
        f"earlier; at most {mentions} new mentions ({len(doc_ids)} documents x {most}, the "
        f"most entities another document of this index names), each joining one of "
        f"{joinable} entities named by 1..{tau - 1} documents, or two making a new one"))
