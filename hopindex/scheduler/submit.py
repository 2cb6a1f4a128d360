"""Turn an ingest or delete request into a job record and launch its canvas."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from hopindex.backends.protocols import IndexInfo
from hopindex.core.errors import HopindexError, InvalidInputError
from hopindex.core.ids import content_hash, doc_id_from_title, validate_index_name
from hopindex.core.ids import job_id as new_job_id
from hopindex.core.logging import get_logger
from hopindex.core.models import (
    Document,
    IndexMethod,
    ItemError,
    Job,
    JobKind,
    JobState,
    MentionSource,
    Stage,
    UnitKind,
)
from hopindex.readers import RawDocument, ReadError
from hopindex.scheduler.canvas import fan_out
from hopindex.scheduler.control import after_stage1, start_linking
from hopindex.scheduler.lifecycle import fail_job, job_started
from hopindex.workers.progress import batched
from hopindex.workers.runtime import Runtime
from hopindex.workers.tasks.embed import purge
from hopindex.workers.tasks.stage1 import stage1

log = get_logger(__name__)

def default_method(runtime: Runtime) -> IndexMethod:
    """LLM mode when an LLM is configured; the extractive pipeline otherwise."""
    return IndexMethod.INDEXRAG if runtime.settings.llm_enabled else IndexMethod.EXTRACTIVE


def ensure_index(runtime: Runtime, index: str, method: str | None = None) -> IndexInfo:
    """The index, created for ``method`` (default: :func:`default_method`) when new.

    An existing index keeps its method: mixing units of two methods in one index
    would make its queries mean nothing.
    """
    validate_index_name(index)
    state = runtime.backends.state
    existing = state.get_index(index)
    if existing is not None:
        if method is not None and method != existing.method:
            raise InvalidInputError(f"index {index!r} is built with {existing.method!r}, not "
                                    f"{method!r}: ingest without --method or into a new index",
                                    where="method")
        chosen = existing.method
    else:
        try:
            chosen = IndexMethod(method) if method is not None else default_method(runtime)
        except ValueError:
            raise InvalidInputError(f"unknown index method {method!r}; known: "
                                    f"{', '.join(m.value for m in IndexMethod)}",
                                    where="method") from None
    if chosen == IndexMethod.INDEXRAG:
        runtime.require_llm(index)
    if existing is not None:
        return existing
    return state.create_index(IndexInfo(name=index, method=str(chosen), created_at=time.time()))


def validate_documents(index: str, raw: Sequence[RawDocument], max_document_bytes: int
                       ) -> tuple[list[Document], list[ItemError]]:
    """Core documents from reader records; a bad record fails alone, naming where it was."""
    documents: list[Document] = []
    errors: list[ItemError] = []
    seen: dict[str, str] = {}
    for record in raw:
        title = " ".join(record.title.split())
        text = record.text.strip()
        doc_id = (record.doc_id or "").strip() or (doc_id_from_title(title) if title else "")
        item = doc_id or record.origin
        reason = ""
        if not text:
            reason = "field 'text' is empty"
        elif not doc_id:
            reason = "record has neither 'id' nor 'title' to identify it"
        elif len(text.encode("utf-8")) > max_document_bytes:
            reason = (f"document is {len(text.encode('utf-8'))} bytes, over the limit of "
                      f"{max_document_bytes} (HOPINDEX_MAX_DOCUMENT_BYTES)")
        elif doc_id in seen:
            reason = f"duplicate id {doc_id!r}, first seen at {seen[doc_id]}"
        if reason:
            errors.append(ItemError(item=item, stage=Stage.VALIDATE, reason=reason,
                                    where=record.origin))
            continue
        seen[doc_id] = record.origin
        documents.append(Document(doc_id=doc_id, index=index, title=title, text=text,
                                  content_hash=content_hash(title, text),
                                  metadata={**record.metadata, "origin": record.origin}))
    return documents, errors


def submit_ingest(runtime: Runtime, index: str, raw: Sequence[RawDocument],
                  read_errors: Sequence[ReadError] = (), *, method: str | None = None,
                  job_id: str | None = None) -> Job:
    """Create the ingest job (``job_id``: the caller's, else a new one) and launch it."""
    ensure_index(runtime, index, method)
    state = runtime.backends.state
    documents, errors = validate_documents(index, raw, runtime.settings.max_document_bytes)
    errors = [ItemError(item=e.origin, stage=Stage.VALIDATE, reason=e.reason, where=e.origin)
              for e in read_errors] + errors
    known = state.document_hashes(index)
    todo = [d for d in documents if known.get(d.doc_id) != d.content_hash]
    job = Job(job_id=job_id or new_job_id(), index=index, kind=JobKind.INGEST,
              state=JobState.RUNNING,
              started_at=time.time())
    validate = job.counts[Stage.VALIDATE]
    validate.total = len(raw) + len(read_errors)
    validate.done = len(documents)
    validate.failed = len(errors)
    job.counts[Stage.STAGE1].total = len(todo)
    job.counts[Stage.STAGE1].skipped = len(documents) - len(todo)
    job.errors.extend(errors)
    state.create_job(job)
    # Stored with an empty hash until the job's finalize step: a job that dies at
    # any stage leaves them "changed", so the next ingest redoes them instead of
    # skipping documents that were never fully indexed.
    state.put_documents([replace(d, content_hash="") for d in todo])
    log.info("job_submitted", job_id=job.job_id, index=index, documents=len(documents),
             to_process=len(todo), unchanged=len(documents) - len(todo), invalid=len(errors))
    job_started(runtime, job)
    doc_ids = [d.doc_id for d in todo]
    header = [stage1.s(job.job_id, index, b)
              for b in batched(doc_ids, runtime.settings.stage1_batch_docs)]
    _launch(runtime, job, lambda: fan_out(
        runtime, job.job_id, "stage1", header, after_stage1.s(job.job_id, index, doc_ids, [])))
    return _reload(runtime, job)


def submit_delete(runtime: Runtime, index: str, doc_ids: Sequence[str],
                  job_id: str | None = None) -> Job:
    """Create the delete job (``job_id``: the caller's, else a new one) and launch it."""
    validate_index_name(index)
    state = runtime.backends.state
    known = state.document_hashes(index)
    job = Job(job_id=job_id or new_job_id(), index=index, kind=JobKind.DELETE,
              state=JobState.RUNNING,
              started_at=time.time())
    present = sorted({d for d in doc_ids if d in known})
    job.counts[Stage.VALIDATE].total = len(doc_ids)
    job.counts[Stage.VALIDATE].done = len(present)
    for missing in sorted(set(doc_ids) - set(present)):
        job.counts[Stage.VALIDATE].failed += 1
        job.errors.append(ItemError(item=missing, stage=Stage.VALIDATE,
                                    reason=f"no document {missing!r} in index {index!r}"))
    state.create_job(job)
    touched: set[str] = set()
    dropped_titles: set[str] = set()
    if present:
        units = state.units_of_documents(index, present)
        touched = {e for u in units if u.kind is UnitKind.BRIDGE for e in u.entities}
        own_titles = {e for e, owners in state.title_lexicon(index).items()
                      if set(owners) <= set(present)}
        passages = [u.unit_id for u in units if u.kind is not UnitKind.BRIDGE]
        touched |= state.delete_mentions(index, present)
        # A title whose only holders left now names no document: its lexicon
        # mentions elsewhere must go too.
        remaining = state.mentions_of_entities(index, sorted(own_titles))
        dropped_titles = {e for e in own_titles
                          if not any(m.source is MentionSource.TITLE
                                     for m in remaining.get(e, []))}
        state.delete_documents(index, present)
    job_started(runtime, job)
    # The passages' engine deletes run on the embed queue, whose worker owns the
    # engines; the bridges they fed are rebuilt after.
    relink = start_linking.si(job.job_id, index, sorted(touched), [], sorted(dropped_titles))
    purges = [purge.si(job.job_id, index, b)
              for b in batched(passages, runtime.settings.embed_batch_units)]
    _launch(runtime, job, lambda: fan_out(runtime, job.job_id, "purge", purges, relink))
    return _reload(runtime, job)


def _launch(runtime: Runtime, job: Job, start: Callable[[], object]) -> None:
    try:
        start()
    except HopindexError as exc:
        fail_job(runtime, job.job_id, f"{type(exc).__name__}: {exc}")
        raise
    except Exception as exc:
        fail_job(runtime, job.job_id, f"unexpected {type(exc).__name__}: {exc}")
        raise


def _reload(runtime: Runtime, job: Job) -> Job:
    return runtime.backends.state.get_job(job.job_id) or job
