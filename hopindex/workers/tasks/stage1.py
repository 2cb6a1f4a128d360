"""Stage 1 task: a batch of documents into units, by the index's method.

``extractive``: NLP analysis, passage units and entity mentions. ``indexrag``: one LLM
call per chunk, AKU units and the entities the model listed.
"""

from __future__ import annotations

import time
from typing import Any

from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.errors import HopindexError
from hopindex.core.logging import get_logger
from hopindex.core.models import (
    Document,
    ItemError,
    MentionSource,
    Stage,
    TextAnalysis,
    Unit,
    UnitKind,
)
from hopindex.methods.extractive.stage1 import extract_document
from hopindex.methods.indexrag.indexing import DocExtraction, extract_documents
from hopindex.methods.indexrag.units import METHOD as INDEXRAG
from hopindex.scheduler.lifecycle import maybe_progress
from hopindex.workers.app import app
from hopindex.workers.failed_items import settle_items
from hopindex.workers.progress import is_cancelled, record_progress
from hopindex.workers.runtime import Runtime, current_runtime

log = get_logger(__name__)

_STAGE1_SOURCES = (MentionSource.NER, MentionSource.TITLE)


@app.task(name="hopindex.stage1")  # type: ignore[untyped-decorator]  # celery is untyped
def stage1(job_id: str, index: str, doc_ids: list[str]) -> dict[str, Any]:
    """Returns the units written as ``[unit_id, characters]``, the entities whose
    bridges may have changed, and the ``stale`` units the embed queue must purge.

    The vector and keyword engines are not touched here: their writes belong to the
    embed queue's worker (see workers/app.py).
    """
    runtime = current_runtime()
    state = runtime.backends.state
    if is_cancelled(state, job_id):
        return {"units": [], "touched": [], "stale": []}
    started = time.perf_counter()
    documents = state.get_documents(index, doc_ids)
    usage = UsageMeter()
    if runtime.index_method(index) == INDEXRAG:
        units, touched, stale, errors = _indexrag(runtime, index, documents, usage)
    else:
        units, touched, stale, errors = _extractive(runtime, index, documents)
    state.put_units(units)
    failed_ids = {e.item for e in errors}
    settle_items(state, index, job_id, Stage.STAGE1, errors=errors,
                 completed=[d.doc_id for d in documents if d.doc_id not in failed_ids])
    job = record_progress(state, job_id, Stage.STAGE1, done=len(documents) - len(failed_ids),
                          failed=len(failed_ids), errors=errors, llm_usage=usage.snapshot())
    maybe_progress(runtime, job)
    log.info("stage_finished", stage="stage1", job_id=job_id, index=index,
             documents=len(documents), units=len(units), failed=len(failed_ids),
             llm_calls=usage.total().calls, duration_s=round(time.perf_counter() - started, 3))
    return {"units": [[u.unit_id, len(u.text)] for u in units], "touched": sorted(touched),
            "stale": sorted(stale)}


# Units written, entities touched, stale unit ids, per-document errors.
_Outcome = tuple[list[Unit], set[str], set[str], list[ItemError]]


def _extractive(runtime: Runtime, index: str, documents: list[Document]) -> _Outcome:
    analyses, errors = _analyze(runtime, documents)
    runtime.backends.state.put_analyses(index, analyses)
    units: list[Unit] = []
    touched: set[str] = set()
    stale: set[str] = set()
    for document in documents:
        if document.doc_id not in analyses:
            continue
        try:
            units_of_doc, touched_of_doc, stale_of_doc = _extract_one(
                runtime, document, analyses[document.doc_id])
        except HopindexError as exc:
            errors.append(ItemError(item=document.doc_id, stage=Stage.STAGE1, reason=str(exc)))
            continue
        units.extend(units_of_doc)
        touched |= touched_of_doc
        stale |= stale_of_doc
    return units, touched, stale, errors


def _indexrag(runtime: Runtime, index: str, documents: list[Document],
              usage: UsageMeter) -> _Outcome:
    """One LLM call per chunk; a document whose extraction fails keeps its previous units
    and its empty content hash, so the next ingest tries it again."""
    llm = runtime.require_llm(index)
    extractions, errors = extract_documents(llm, documents, usage)
    units: list[Unit] = []
    touched: set[str] = set()
    stale: set[str] = set()
    for extraction in extractions:
        units.extend(extraction.units)
        touched_of_doc, stale_of_doc = _replace_document_facts(runtime, extraction)
        touched |= touched_of_doc
        stale |= stale_of_doc
    return units, touched, stale, errors


def _replace_document_facts(runtime: Runtime, extraction: DocExtraction
                            ) -> tuple[set[str], set[str]]:
    state = runtime.backends.state
    document = extraction.document
    new_ids = {u.unit_id for u in extraction.units}
    previous = state.units_of_documents(document.index, [document.doc_id])
    stale = {u.unit_id for u in previous if u.kind is UnitKind.AKU} - new_ids
    # Bridging facts quote the facts of every source document: any bridge this
    # document fed, and every entity it names, is rebuilt. The document runs stage 1
    # only because its text changed, so this costs nothing extra, and it keeps a
    # redelivered task (whose first run already wrote the units) touching the same set.
    touched = {e for u in previous if u.kind is UnitKind.BRIDGE for e in u.entities}
    touched |= state.replace_mentions(document.index, document.doc_id, extraction.mentions(),
                                      (MentionSource.LLM,))
    touched |= set(extraction.entities)
    return touched, stale


def _analyze(runtime: Runtime, documents: list[Document]
             ) -> tuple[dict[str, TextAnalysis], list[ItemError]]:
    nlp = runtime.backends.nlp
    try:
        found = nlp.analyze_texts([d.text for d in documents])
        return {d.doc_id: a for d, a in zip(documents, found, strict=True)}, []
    except Exception:  # retried one by one below to isolate the bad document
        log.warning("batch_analysis_failed", documents=len(documents))
    analyses: dict[str, TextAnalysis] = {}
    errors: list[ItemError] = []
    for document in documents:
        try:
            analyses[document.doc_id] = nlp.analyze_texts([document.text])[0]
        except Exception as exc:  # one document's failure must not stop the rest
            errors.append(ItemError(item=document.doc_id, stage=Stage.STAGE1,
                                    reason=f"NLP analysis failed: {exc}"))
    return analyses, errors


def _extract_one(runtime: Runtime, document: Document,
                 analysis: TextAnalysis) -> tuple[list[Unit], set[str], set[str]]:
    state = runtime.backends.state
    output = extract_document(document, analysis, runtime.chunk_policy)
    new_ids = {u.unit_id for u in output.units}
    previous = state.units_of_documents(document.index, [document.doc_id])
    stale = {u.unit_id for u in previous
             if u.kind is UnitKind.PASSAGE and u.unit_id not in new_ids}
    # Every bridge quoting this document may quote changed text: recompute them all,
    # and every entity it names (see _replace_document_facts for why always).
    touched = {e for u in previous if u.kind is UnitKind.BRIDGE for e in u.entities}
    touched |= state.replace_mentions(document.index, document.doc_id, output.mentions,
                                      _STAGE1_SOURCES)
    touched |= {m.entity for m in output.mentions}
    return output.units, touched, stale
