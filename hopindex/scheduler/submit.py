"""Turn an ingest or delete request into a job record and launch its canvas.

Every step, from the index check to the fan-out, runs under :func:`planning`: what
it raises fails the job with the reason, so a job never stays "running" because it
could not be planned or launched. Embedded (no broker) the fan-out runs the whole
job inside the call, so that covers every task and chord callback as well.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from hopindex.backends.protocols import IndexInfo, StateStore
from hopindex.core.budget import MAX_COST, BudgetLimits, index_default
from hopindex.core.citations import RESERVED_METADATA_KEY
from hopindex.core.errors import HopindexError, InvalidInputError, JobFailedError
from hopindex.core.ids import content_hash, doc_id_from_title, validate_index_name
from hopindex.core.ids import job_id as new_job_id
from hopindex.core.llm_modes import job_mode
from hopindex.core.logging import get_logger
from hopindex.core.models import (
    Document,
    ItemError,
    Job,
    JobKind,
    JobState,
    Stage,
    Unit,
)
from hopindex.core.settings import LlmMode
from hopindex.core.text import printable, unstorable_field
from hopindex.methods.plugin import IndexMethod, PhaseKind, Scope, phase_name
from hopindex.methods.registry import default_index_method, get_index_method
from hopindex.readers import RawDocument, ReadError
from hopindex.readers.identity import RecordIdentities
from hopindex.scheduler.canvas import fan_out
from hopindex.scheduler.corpus import corpus_tokens
from hopindex.scheduler.dry_run_plan import estimate_ingest
from hopindex.scheduler.file_documents import refresh_layouts, stale_documents
from hopindex.scheduler.job_traces import begin_trace
from hopindex.scheduler.lifecycle import fail_job, job_started
from hopindex.scheduler.pipeline import first_step, start_steps
from hopindex.scheduler.progress import batched
from hopindex.scheduler.recovery import owning, redo_hint
from hopindex.scheduler.runtime import Runtime
from hopindex.scheduler.task_names import FINALIZE, PURGE
from hopindex.scheduler.writers import Announce, WaitPolicy, enter_line

log = get_logger(__name__)


def default_method(runtime: Runtime) -> str:
    """The method an index gets when its first ingest names none."""
    return default_index_method(runtime.settings.llm_enabled)


def method_mismatch(index: str, existing: str, asked: str) -> str:
    """Why an ingest naming ``asked`` cannot go into ``index``, built with ``existing``;
    in words every door can show (the CLI's flag, the API's field and the SDK's
    argument are all called method)."""
    return (f"index {index!r} is built with {existing!r}, not {asked!r}: ingest into it "
            "without naming a method, or into a new index")


def ensure_index(runtime: Runtime, index: str, method: str | None = None) -> IndexInfo:
    """The index, created for ``method`` (default: :func:`default_method`) when new.

    An existing index keeps its method: mixing units of two methods in one index
    would make its queries mean nothing.
    """
    validate_index_name(index)
    if method is not None:
        get_index_method(method)  # an unknown name is refused as such, before any mismatch
    state = runtime.backends.state
    existing = state.get_index(index)
    if existing is not None:
        if method is not None and method != existing.method:
            raise InvalidInputError(method_mismatch(index, existing.method, method),
                                    where="method")
        chosen = get_index_method(existing.method)
    else:
        chosen = get_index_method(method if method is not None else default_method(runtime))
    runtime.require_llm(index, chosen)
    if existing is not None:
        return existing
    return state.create_index(IndexInfo(name=index, method=chosen.name, created_at=time.time()))




def validate_documents(index: str, raw: Sequence[RawDocument], max_document_bytes: int
                       ) -> tuple[list[Document], list[ItemError]]:
    """Core documents from reader records; a bad record fails alone, naming where it was."""
    documents: list[Document] = []
    errors: list[ItemError] = []
    identities = RecordIdentities()
    for record in raw:
        origin = printable(record.origin)
        # Before anything hashes or stores the record's strings: the same check as
        # the readers', for documents built by a program.
        unstorable = unstorable_field([("id", record.doc_id or ""), ("title", record.title),
                                       ("text", record.text), ("metadata", record.metadata)])
        if unstorable is not None:
            errors.append(ItemError(item=printable(record.doc_id or "") or origin,
                                    stage=Stage.VALIDATE, reason=str(unstorable),
                                    where=f"{origin}:{unstorable.field}"))
            continue
        title = " ".join(record.title.split())
        text = record.text.strip()
        doc_id = (record.doc_id or "").strip() or (doc_id_from_title(title) if title else "")
        item = doc_id or origin
        reason = ""
        if not text:
            reason = "field 'text' is empty"
        elif not doc_id:
            reason = "record has neither 'id' nor 'title' to identify it"
        elif len(text.encode("utf-8")) > max_document_bytes:
            reason = (f"document is {len(text.encode('utf-8')):,} bytes of UTF-8 text, over "
                      f"the {max_document_bytes:,}-byte limit (HOPINDEX_MAX_DOCUMENT_BYTES)")
        elif RESERVED_METADATA_KEY in record.metadata:
            reason = (f"metadata key {RESERVED_METADATA_KEY!r} is reserved for hopindex's own "
                      "fields (where the document came from): rename that key")
        else:
            # Only a valid record claims its id: a bad one must not make the next a duplicate.
            admitted = identities.admit(replace(record, origin=origin))
            reason = admitted.duplicate
            doc_id = (admitted.record.doc_id or "").strip() or doc_id
        if reason:
            errors.append(ItemError(item=item, stage=Stage.VALIDATE, reason=reason,
                                    where=origin))
            continue
        documents.append(Document(doc_id=doc_id, index=index, title=title, text=text,
                                  content_hash=content_hash(title, text),
                                  metadata={**record.metadata,
                                            RESERVED_METADATA_KEY: {**(record.layout or {}),
                                                                    "origin": origin}}))
    return documents, errors


def read_error_items(read_errors: Sequence[ReadError]) -> list[ItemError]:
    """Reader errors as the job's validation errors, escaped so the record can hold them."""
    return [ItemError(item=printable(e.origin), stage=Stage.VALIDATE,
                      reason=printable(e.reason), where=printable(e.origin))
            for e in read_errors]


@contextmanager
def planning(runtime: Runtime, job_id: str, kind: JobKind) -> Iterator[None]:
    """Fail job ``job_id`` with the reason when the block raises, so no job stays
    "running" because its planning or launch went wrong.

    A HopindexError goes on as itself (its type says what the API answers); any other
    error becomes a JobFailedError; an interrupt (Ctrl-C) fails the job and goes on.
    The job may not exist yet (a failed index check), which is fine: nothing to fail.
    Embedded, the block's fan-out runs the whole job, so this covers its every task.
    """
    try:
        yield
    except HopindexError as exc:
        _fail(runtime, job_id, f"{type(exc).__name__}: {exc}")
        raise
    except Exception as exc:
        reason = f"unexpected {type(exc).__name__}: {exc}"
        failed = _fail(runtime, job_id, reason)
        # The job may hold a closer reason already: a task's own failure recorded it.
        told = f"job {job_id} failed: {failed.reason}" if failed is not None else reason
        raise JobFailedError(told) from exc
    except BaseException as exc:
        _fail(runtime, job_id, f"interrupted ({type(exc).__name__}) while it ran in this "
                               f"process; {redo_hint(kind)}")
        raise


def _fail(runtime: Runtime, job_id: str, reason: str) -> Job | None:
    try:
        return fail_job(runtime, job_id, printable(reason))
    except Exception as exc:
        # The store that just failed may fail again: the caller must still see the
        # first error, and the next start of a service recovers the job.
        log.error("job_fail_not_recorded", job_id=job_id, reason=printable(reason),
                  error=printable(f"{type(exc).__name__}: {exc}"))
        return None


def new_job(job_id: str, index: str, kind: JobKind, owner: dict[str, Any]) -> Job:
    """A job of any kind as submitted: queued until its turn on the index
    (scheduler/writers.py)."""
    return Job(job_id=job_id, index=index, kind=kind, state=JobState.QUEUED, owner=owner,
               trace=begin_trace(kind))


def submit_ingest(runtime: Runtime, index: str, raw: Sequence[RawDocument],
                  read_errors: Sequence[ReadError] = (), *, method: str | None = None,
                  job_id: str | None = None, budget: BudgetLimits | None = None,
                  wait: WaitPolicy = WaitPolicy.WAIT, announce: Announce | None = None,
                  llm_mode: LlmMode | None = None) -> Job:
    """Create the ingest job (``job_id``: the caller's, else a new one) and launch it at
    its turn on the index (``wait``: what to do until then, scheduler/writers.py).

    ``budget``: what its LLM calls may use before it pauses (scheduler/pause.py); each
    limit it gives replaces that one of the index's default budget. ``llm_mode``: how
    its LLM calls are made (None: the index's default, else the setting's)."""
    job_id = job_id or new_job_id()
    if budget is not None:
        check_budget(runtime, budget)
    # The owner (this process, when it runs the job itself) outlasts the planning, so
    # the job is final before the owner's lease is given back.
    with owning(runtime.settings) as owner, planning(runtime, job_id, JobKind.INGEST):
        info = ensure_index(runtime, index, method)
        documents, errors = validate_documents(index, raw, runtime.settings.max_document_bytes)
        errors = read_error_items(read_errors) + errors
        job = new_job(job_id, index, JobKind.INGEST, owner)
        # A limit given replaces that limit of the index's default, never the other one.
        default = index_default(info.options)
        job.budget = default if budget is None else default.with_overrides(
            max_llm_tokens=budget.max_llm_tokens, max_cost=budget.max_cost)
        check_budget(runtime, job.budget)
        job.llm_mode = job_mode(llm_mode, info.options, runtime.settings.llm_mode).mode
        validate = job.count(Stage.VALIDATE)
        validate.total = len(raw) + len(read_errors)
        validate.done = len(documents)
        validate.failed = len(errors)
        job.errors.extend(errors)
        if enter_line(runtime, job, wait, announce,
                      lambda: [document_record(d) for d in documents]) is not None:
            begin_ingest(runtime, job_id, index, documents)
    return _reload(runtime, job)


def document_record(document: Document) -> dict[str, Any]:
    return {"doc_id": document.doc_id, "title": document.title, "text": document.text,
            "metadata": document.metadata}


def document_of(index: str, record: dict[str, Any]) -> Document:
    title, text = str(record["title"]), str(record["text"])
    return Document(doc_id=str(record["doc_id"]), index=index, title=title, text=text,
                    content_hash=content_hash(title, text), metadata=dict(record["metadata"]))


def begin_ingest(runtime: Runtime, job_id: str, index: str,
                 documents: Sequence[Document]) -> None:
    """At the job's turn: compare with what the index holds now, store what is new or
    changed, remove the sections gone from the files read again (file_documents.py),
    and start the method's first phase."""
    state = runtime.backends.state
    known = state.document_hashes(index)
    todo = [d for d in documents if known.get(d.doc_id) != d.content_hash]
    stale = stale_documents(known, documents)
    moved = refresh_layouts(state, index, [d for d in documents
                                           if known.get(d.doc_id) == d.content_hash])
    method = runtime.index_method(index)
    # The dry run's figures, planned before the documents are stored (as a dry run
    # would see them), kept beside what the job's calls then really use.
    estimate = estimate_ingest(runtime, index, method, todo)
    # The documents the phases will read: unchanged ones cost no call, so they are no
    # part of what the job's LLM use is measured against.
    corpus = corpus_tokens(method, todo)

    def change(job: Job) -> None:
        # Unchanged documents count as skipped items of the first documents phase: a
        # finished job is then 100 % through every step.
        count_unchanged(job, method, len(documents) - len(todo))
        job.estimate = estimate
        job.corpus_tokens = corpus

    job = state.update_job(job_id, change)
    # Stored with an empty hash until the job's finalize step: a job that dies at
    # any stage leaves them "changed", so the next ingest redoes them instead of
    # skipping documents that were never fully indexed.
    state.put_documents([replace(d, content_hash="") for d in todo])
    log.info("job_submitted", job_id=job_id, index=index, documents=len(documents),
             to_process=len(todo), unchanged=len(documents) - len(todo),
             invalid=job.count(Stage.VALIDATE).failed, replaced_sections=len(stale),
             moved_sections=moved)
    job_started(runtime, job)
    scope = Scope(doc_ids=[d.doc_id for d in todo],
                  hashes={d.doc_id: d.content_hash for d in todo})
    if not stale:
        start_steps(runtime, job_id, index, scope)
        return
    # As a delete would: forget the documents, purge their units on the embed queue,
    # and let the phases rebuild what they fed, with the new documents.
    purged, forgotten = _forget_documents(runtime, index, delete_plan(state, index, stale))
    scope.deleted = forgotten.deleted
    scope.notes = forgotten.notes
    scope.touch(forgotten.touched)
    purges = [runtime.signature(PURGE, job_id, index, b, immutable=True)
              for b in batched(purged, runtime.settings.embed_batch_units)]
    fan_out(runtime, job_id, "purge", purges, first_step(runtime, job_id, index, scope))


def check_budget(runtime: Runtime, budget: BudgetLimits) -> None:
    """Refuse a money budget that nothing could count against: with no prices every
    call costs nothing, and the job would never pause."""
    settings = runtime.settings
    if budget.max_cost is not None and settings.llm_price_input_per_mtok is None:
        raise InvalidInputError("a max_cost budget needs LLM prices: set "
                                "HOPINDEX_LLM_PRICE_INPUT_PER_MTOK and "
                                "HOPINDEX_LLM_PRICE_OUTPUT_PER_MTOK, or give max_llm_tokens",
                                where=MAX_COST)


def count_unchanged(job: Job, method: IndexMethod, unchanged: int) -> None:
    """Count ``unchanged`` documents as skipped by the method's first documents phase."""
    first = next((p for p in method.phases if p.kind is PhaseKind.DOCUMENTS), None)
    if first is None:
        return
    qualified = phase_name(method.name, first)
    job.phases[qualified] = PhaseKind.DOCUMENTS.value
    counts = job.count(qualified)
    counts.total += unchanged
    counts.skipped += unchanged


@dataclass(frozen=True, slots=True)
class DeletePlan:
    """What a delete removes, read before anything is removed."""

    present: list[str]  # ids to delete (see delete_plan)
    gone: set[str]  # of those, ids whose document an interrupted delete removed already
    errors: list[ItemError]  # ids that name no document, or that cannot be stored
    units: list[Unit]  # units citing the ids


def delete_plan(state: StateStore, index: str, doc_ids: Sequence[str]) -> DeletePlan:
    """The documents ``doc_ids`` name, and what they fed.

    An id some unit still cites is deleted even when its document is gone: a delete
    that died half-way removed the document first, so running it again finishes it
    (purges its units, rebuilds the groups they fed) instead of calling it unknown.
    """
    errors: list[ItemError] = []
    storable: set[str] = set()
    for doc_id in sorted(set(doc_ids)):
        unstorable = unstorable_field([("id", doc_id)])
        if unstorable is None:
            storable.add(doc_id)
        else:
            errors.append(ItemError(item=printable(doc_id), stage=Stage.VALIDATE,
                                    reason=str(unstorable)))
    units = state.units_of_documents(index, sorted(storable))
    cited = {d for u in units for d in u.source_doc_ids}
    known = state.document_hashes(index)
    present = sorted(d for d in storable if d in known or d in cited)
    errors += [ItemError(item=d, stage=Stage.VALIDATE, reason=f"no document {d!r} in index "
                                                             f"{index!r}")
               for d in sorted(storable - set(present))]
    errors.sort(key=lambda e: e.item)
    return DeletePlan(present=present, gone=set(present) - set(known), errors=errors,
                      units=units)


def _forget_documents(runtime: Runtime, index: str, plan: DeletePlan) -> tuple[list[str], Scope]:
    """Remove the plan's documents and the method's records of them; returns the units
    to purge and the scope of the phases that rebuild what they fed."""
    state = runtime.backends.state
    method = runtime.index_method(index)
    context = runtime.phase_context(index, method.phases[0].name)
    forgotten = method.forget_documents(context, plan.present)
    # A group's units are rebuilt by its phase, which purges the ones it replaces; one
    # that cites a document already gone (an interrupted delete) is stale now and is
    # purged with it.
    group_kinds = {k for p in method.phases if p.kind is not PhaseKind.DOCUMENTS
                   for k in p.writes}
    purged = [u.unit_id for u in plan.units
              if u.kind not in group_kinds or plan.gone & set(u.source_doc_ids)]
    scope = Scope(deleted=list(plan.present), notes=dict(forgotten.notes))
    scope.touch(forgotten.touched)
    for phase in method.phases:
        namespace = getattr(phase, "namespace", None)
        if namespace is not None:
            scope.touch({namespace: state.groups_of_documents(index, namespace, plan.present)})
    state.delete_records(index, plan.present)
    state.delete_documents(index, plan.present)
    # A deleted document is no longer outstanding work of the index.
    for phase in method.phases:
        if phase.kind is PhaseKind.DOCUMENTS:
            state.clear_failed_items(index, phase_name(method.name, phase), plan.present)
    return purged, scope


def submit_delete(runtime: Runtime, index: str, doc_ids: Sequence[str],
                  job_id: str | None = None, *, wait: WaitPolicy = WaitPolicy.WAIT,
                  announce: Announce | None = None) -> Job:
    """Create the delete job (``job_id``: the caller's, else a new one) and launch it at
    its turn on the index.

    Ids that name no document are listed on the job as validation errors; the job
    still runs, and succeeds, when none of them does.
    """
    job_id = job_id or new_job_id()
    with owning(runtime.settings) as owner, planning(runtime, job_id, JobKind.DELETE):
        validate_index_name(index)
        job = new_job(job_id, index, JobKind.DELETE, owner)
        job.count(Stage.VALIDATE).total = len(doc_ids)
        if enter_line(runtime, job, wait, announce,
                      lambda: [{"doc_ids": list(doc_ids)}]) is not None:
            begin_delete(runtime, job_id, index, doc_ids)
    return _reload(runtime, job)


def begin_delete(runtime: Runtime, job_id: str, index: str, doc_ids: Sequence[str]) -> None:
    """At the job's turn: plan what the ids name now, remove it, and rebuild what it fed."""
    state = runtime.backends.state
    plan = delete_plan(state, index, doc_ids)

    def change(job: Job) -> None:
        validate = job.count(Stage.VALIDATE)
        validate.done = len(plan.present)
        validate.failed = len(plan.errors)
        job.errors.extend(plan.errors)

    job = state.update_job(job_id, change)
    job_started(runtime, job)
    if state.get_index(index) is None:
        # Nothing was ever indexed here: every id is an error, nothing to rebuild.
        fan_out(runtime, job_id, "purge", [],
                runtime.signature(FINALIZE, job_id, index, immutable=True))
        return
    purged, scope = _forget_documents(runtime, index, plan)
    # The units' engine deletes run on the embed queue, whose worker owns the
    # engines; the method's phases then rebuild what the documents fed.
    purges = [runtime.signature(PURGE, job_id, index, b, immutable=True)
              for b in batched(purged, runtime.settings.embed_batch_units)]
    fan_out(runtime, job_id, "purge", purges, first_step(runtime, job_id, index, scope))


def _reload(runtime: Runtime, job: Job) -> Job:
    return runtime.backends.state.get_job(job.job_id) or job
