"""One batch of a method's phase, run for the runtime: the method computes, this writes.

The method's function returns units (and, for groups, each group's units); this
module stores them, finds the units they replace, records failed items and clears
completed ones, counts progress and LLM usage on the job, and returns what the
embed step needs. The vector and keyword engines are not touched here: their
writes belong to the embed queue's worker (see workers/app.py).

Write order keeps every moment of a crash findable: new units are stored before a
group is repointed to them, and replaced units are purged last, on the embed
queue, after being noted on the job so a run killed after repointing still has
them purged.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from celery import current_task

from hopindex.backends.llm.batch_scope import BatchPendingError, BatchScope
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.budget import BudgetScope
from hopindex.core.errors import HopindexError
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, LlmUsage, Unit
from hopindex.core.settings import LlmMode
from hopindex.methods.plugin import (
    DocumentsPhase,
    GroupsPhase,
    GroupsResult,
    LevelsPhase,
    find_phase,
    phase_name,
)
from hopindex.scheduler.failed_items import level_phase, settle_items
from hopindex.scheduler.lifecycle import maybe_progress
from hopindex.scheduler.progress import current_task_key, settle, working_job
from hopindex.scheduler.provider_batches import send_batch
from hopindex.scheduler.runtime import Runtime

log = get_logger(__name__)

Outcome = dict[str, Any]


def _per_phase(phase: str, usage: UsageMeter) -> dict[str, LlmUsage]:
    """The batch's LLM usage, on the job under its phase's name whatever stage labels
    the method's requests carry."""
    total = usage.total()
    return {phase: total} if total.calls or total.cache_hits else {}


def _metered(runtime: Runtime, job: Job, phase: str) -> UsageMeter:
    """The batch's meter, reserving each call against the job's budget when it has one;
    in batch mode, answering its calls from provider batches unless the phase is too
    small to be worth one (``llm_batch_min_items``)."""
    budget = BudgetScope(job.job_id, job.budget) if job.budget.is_limited else None
    settings = runtime.settings
    batch = None
    if job.llm_mode is LlmMode.BATCH and (
            job.count(phase).total >= settings.llm_batch_min_items):
        batch = BatchScope(job.job_id, max_rounds=settings.llm_batch_max_rounds)
    return UsageMeter(budget=budget, batch=batch)


@contextmanager
def _batched(runtime: Runtime, job_id: str, phase: str) -> Iterator[None]:
    """A run whose calls wait for a provider batch sends their lines as one and ends
    waiting (scheduler/provider_batches.py); the task then ends like a paused one."""
    try:
        yield
    except BatchPendingError as pending:
        send_batch(runtime, job_id, phase, _current_task_id(), pending.lines)
        raise


def _current_task_id() -> str:
    task_id = getattr(getattr(current_task, "request", None), "id", None)
    return str(task_id or "")


@contextmanager
def _usage_kept(runtime: Runtime, job_id: str, phase: str, usage: UsageMeter) -> Iterator[None]:
    """When the batch ends without its own settle (the job paused, or an error the task
    retries or fails on), put the calls it already paid for on the job record.

    A run again answers those calls from the response cache for nothing, so without
    this the job would show less than it spent. Keyed by a fresh id: the same task run
    again must add what it spends then, not be taken for this record.
    """
    try:
        yield
    except BatchPendingError:
        # Nothing was paid: the batch results it read are read again by the next run,
        # and the poller counts what a batch cost.
        raise
    except Exception:
        paid = _per_phase(phase, usage)
        if paid:
            def change(job: Job) -> None:
                job.add_llm_usage(paid)

            try:
                settle(runtime.backends.state, job_id, change,
                       key=f"unsettled:{uuid.uuid4().hex}")
            except HopindexError as exc:  # the state failing: the task's error comes first
                log.warning("llm_usage_not_recorded", job_id=job_id, phase=phase,
                            error=str(exc))
        raise


def _pairs(units: list[Unit]) -> list[list[Any]]:
    return [[u.unit_id, len(u.text)] for u in units]


def run_documents(runtime: Runtime, job_id: str, index: str, phase_key: str,
                  doc_ids: list[str]) -> Outcome:
    """Returns the units written as ``[unit_id, characters]``, the group keys touched per
    namespace, and the ``stale`` units the embed step must purge."""
    state = runtime.backends.state
    job = working_job(state, job_id)
    if job is None:
        return {"units": [], "touched": {}, "stale": []}
    started = time.perf_counter()
    method = runtime.index_method(index)
    phase = find_phase(method, phase_key)
    assert isinstance(phase, DocumentsPhase)
    qualified = phase_name(method.name, phase)
    usage = _metered(runtime, job, qualified)
    context = runtime.phase_context(index, phase.name, usage, job_id=job_id)
    documents = state.get_documents(index, doc_ids)
    previous = (state.units_of_documents(index, [d.doc_id for d in documents],
                                         kinds=tuple(phase.writes))
                if phase.writes else [])
    with _batched(runtime, job_id, qualified), _usage_kept(runtime, job_id, qualified, usage):
        result = phase.run(context, documents)
    failed = {e.item for e in result.errors}
    completed = [d.doc_id for d in documents if d.doc_id not in failed]
    units = [u for u in result.units if not failed.intersection(u.source_doc_ids)]
    state.put_units(units)
    new_ids = {u.unit_id for u in units}
    done = set(completed)
    # A document's earlier units of the kinds this phase writes that its new run no
    # longer produced; a failed document keeps its previous units.
    stale = sorted({u.unit_id for u in previous
                    if u.unit_id not in new_ids and done.intersection(u.source_doc_ids)})
    settle_items(state, index, job_id, qualified, errors=result.errors, completed=completed)

    def change(job: Job) -> None:
        counts = job.count(qualified)
        counts.done += len(completed)
        counts.failed += len(failed)
        counts.skipped += len(doc_ids) - len(documents)
        job.errors.extend(result.errors)
        job.add_llm_usage(_per_phase(qualified, usage))

    job, _ = settle(state, job_id, change)
    maybe_progress(runtime, job)
    log.info("stage_finished", stage=qualified, job_id=job_id, index=index,
             documents=len(documents), units=len(units), failed=len(failed),
             llm_calls=usage.total().calls, duration_s=round(time.perf_counter() - started, 3))
    return {"units": _pairs(units),
            "touched": {ns: sorted(keys) for ns, keys in sorted(result.touched.items())},
            "stale": stale}


def run_groups(runtime: Runtime, job_id: str, index: str, phase_key: str, *, level: int,
               keys: list[str]) -> Outcome:
    """A groups phase's batch of keys, or one level's items of a levels phase: each
    group's units replace its previous ones. Returns the units written and the
    ``stale`` units the embed step must purge."""
    state = runtime.backends.state
    job = working_job(state, job_id)
    if job is None:
        return {"units": [], "stale": []}
    started = time.perf_counter()
    method = runtime.index_method(index)
    phase = find_phase(method, phase_key)
    assert isinstance(phase, GroupsPhase | LevelsPhase)
    qualified = phase_name(method.name, phase)
    usage = _metered(runtime, job, qualified)
    context = runtime.phase_context(index, phase.name, usage, job_id=job_id)
    result: GroupsResult
    with _batched(runtime, job_id, qualified), _usage_kept(runtime, job_id, qualified, usage):
        if isinstance(phase, LevelsPhase):
            result = phase.build(context, level, keys)
        else:
            result = phase.build(context, keys)
    failed_as = level_phase(qualified, level) if isinstance(phase, LevelsPhase) else qualified
    failed = {e.item for e in result.errors}
    settled = [k for k in keys if k not in failed]
    built = [u for k in settled for u in result.built.get(k, [])]
    state.put_units(built)
    new_of = {k: [u.unit_id for u in result.built.get(k, [])] for k in settled}
    current = state.get_groups(index, phase.namespace, settled)
    stale = sorted({u for k in settled for u in (current[k].unit_ids if k in current else ())
                    if u not in new_of[k]})
    _note_stale(runtime, job_id, stale)
    removed = 0
    for key in settled:
        members = sorted({d for u in result.built.get(key, []) for d in u.source_doc_ids})
        previous = state.replace_group(index, phase.namespace, key, new_of[key], members)
        if previous and not new_of[key]:
            removed += 1
    # After the groups point at the new units: a crash before this leaves the key
    # outstanding, and redoing it is harmless.
    settle_items(state, index, job_id, failed_as, errors=result.errors, completed=settled)
    with_units = sum(1 for k in settled if new_of[k])
    # A phase that writes no unit keeps its result as records (kgbridge's links): every
    # key it settled is done. Elsewhere a key left without units was skipped.
    done = with_units if phase.writes else len(settled)

    def change(job: Job) -> None:
        counts = job.count(qualified)
        counts.done += done
        counts.failed += len(failed)
        counts.skipped += len(keys) - done - len(failed)
        job.errors.extend(result.errors)
        job.groups_rebuilt += with_units
        job.groups_removed += removed
        job.add_llm_usage(_per_phase(qualified, usage))

    job, _ = settle(state, job_id, change)
    maybe_progress(runtime, job)
    log.info("stage_finished", stage=qualified, job_id=job_id, index=index, level=level,
             groups=len(keys), units=len(built), removed=removed, failed=len(failed),
             llm_calls=usage.total().calls, duration_s=round(time.perf_counter() - started, 3))
    return {"units": _pairs(built), "stale": stale}


def _note_stale(runtime: Runtime, job_id: str, stale: list[str]) -> None:
    if not stale:
        return

    def change(job: Job) -> None:
        known = set(job.stale_units)
        job.stale_units.extend(u for u in dict.fromkeys(stale) if u not in known)

    settle(runtime.backends.state, job_id, change, key=f"stale-{current_task_key()}")
