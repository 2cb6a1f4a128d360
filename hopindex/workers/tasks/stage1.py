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
from hopindex.workers.app import app
from hopindex.workers.progress import is_cancelled, record_progress
from hopindex.workers.runtime import Runtime, current_runtime
from hopindex.workers.writes import delete_units_everywhere

log = get_logger(__name__)

_STAGE1_SOURCES = (MentionSource.NER, MentionSource.TITLE)


@app.task(name="hopindex.stage1")  # type: ignore[untyped-decorator]  # celery is untyped
def stage1(job_id: str, index: str, doc_ids: list[str]) -> dict[str, Any]:
    """Returns the units written as ``[unit_id, characters]`` and the entities whose
    bridges may have changed."""
    runtime = current_runtime()
    state = runtime.backends.state
    if is_cancelled(state, job_id):
        return {"units": [], "touched": []}
    started = time.perf_counter()
    documents = state.get_documents(index, doc_ids)
    usage = UsageMeter()
    if runtime.index_method(index) == INDEXRAG:
        units, touched, errors = _indexrag(runtime, index, documents, usage)
    else:
        units, touched, errors = _extractive(runtime, index, documents)
    state.put_units(units)
    failed_ids = {e.item for e in errors}
    record_progress(state, job_id, Stage.STAGE1, done=len(documents) - len(failed_ids),
                    failed=len(failed_ids), errors=errors, llm_usage=usage.snapshot())
    log.info("stage_finished", stage="stage1", job_id=job_id, index=index,
             documents=len(documents), units=len(units), failed=len(failed_ids),
             llm_calls=usage.total().calls, duration_s=round(time.perf_counter() - started, 3))
    return {"units": [[u.unit_id, len(u.text)] for u in units], "touched": sorted(touched)}


_Outcome = tuple[list[Unit], set[str], list[ItemError]]


def _extractive(runtime: Runtime, index: str, documents: list[Document]) -> _Outcome:
    analyses, errors = _analyze(runtime, documents)
    runtime.backends.state.put_analyses(index, analyses)
    units: list[Unit] = []
    touched: set[str] = set()
    for document in documents:
        if document.doc_id not in analyses:
            continue
        try:
            units_of_doc, touched_of_doc = _extract_one(runtime, document,
                                                        analyses[document.doc_id])
        except HopindexError as exc:
            errors.append(ItemError(item=document.doc_id, stage=Stage.STAGE1, reason=str(exc)))
            continue
        units.extend(units_of_doc)
        touched |= touched_of_doc
    return units, touched, errors


def _indexrag(runtime: Runtime, index: str, documents: list[Document],
              usage: UsageMeter) -> _Outcome:
    """One LLM call per chunk; a document whose extraction fails keeps its previous units
    and its empty content hash, so the next ingest tries it again."""
    llm = runtime.require_llm(index)
    extractions, errors = extract_documents(llm, documents, usage)
    units: list[Unit] = []
    touched: set[str] = set()
    for extraction in extractions:
        units.extend(extraction.units)
        touched |= _replace_document_facts(runtime, extraction)
    return units, touched, errors


def _replace_document_facts(runtime: Runtime, extraction: DocExtraction) -> set[str]:
    state = runtime.backends.state
    document = extraction.document
    new_ids = {u.unit_id for u in extraction.units}
    previous = state.units_of_documents(document.index, [document.doc_id])
    old_ids = {u.unit_id for u in previous if u.kind is UnitKind.AKU}
    delete_units_everywhere(runtime.backends, document.index, sorted(old_ids - new_ids))
    # Bridging facts quote the facts of every source document: any bridge this
    # document fed, and every entity it names, must be rebuilt when its facts moved.
    touched = {e for u in previous if u.kind is UnitKind.BRIDGE for e in u.entities}
    touched |= state.replace_mentions(document.index, document.doc_id, extraction.mentions(),
                                      (MentionSource.LLM,))
    if old_ids != new_ids:
        touched |= set(extraction.entities)
    return touched


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
                 analysis: TextAnalysis) -> tuple[list[Unit], set[str]]:
    state = runtime.backends.state
    output = extract_document(document, analysis, runtime.chunk_policy)
    new_ids = {u.unit_id for u in output.units}
    previous = state.units_of_documents(document.index, [document.doc_id])
    stale = [u.unit_id for u in previous
             if u.kind is UnitKind.PASSAGE and u.unit_id not in new_ids]
    delete_units_everywhere(runtime.backends, document.index, stale)
    # Every bridge quoting this document may quote changed text: recompute them all.
    touched = {e for u in previous if u.kind is UnitKind.BRIDGE for e in u.entities}
    touched |= state.replace_mentions(document.index, document.doc_id, output.mentions,
                                      _STAGE1_SOURCES)
    if stale or not previous:
        touched |= {m.entity for m in output.mentions}
    return output.units, touched
