"""A job's chain of steps, for any index method: each phase, then its embed step.

    phase 0 → embed → phase 1 → embed → … → finalize

A documents phase runs over the documents its ``select`` picks (by default the
job's new or changed ones); a groups phase over the keys earlier phases touched in
its namespace, plus those an earlier job failed; a levels phase once per level
until its planner returns nothing (and no failed item of a higher level is left). A
levels phase built only on request is built, finished or skipped as
scheduler/level_builds.py decides. Every phase and embed step is one recorded
fan-out (scheduler/canvas.py), so a lost message is re-sent by the reaper.

Each callback first claims its step on the job record (``start_phase``): one
delivered twice, or arriving after the job was cancelled or failed, schedules
nothing. The job's ``Scope`` (what it changes: its documents, the group keys its
phases touched) is kept in the state store (``put_job_scope``), written when the job
starts and when a phase touches keys, and read by each step: a task message carries
the job's id, so its size does not grow with the job's documents.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import chain
from typing import Any

from hopindex.core.ids import content_hash
from hopindex.core.logging import get_logger
from hopindex.core.models import Stage
from hopindex.methods.plugin import (
    DocumentsPhase,
    GroupsPhase,
    LevelsPhase,
    PhaseContext,
    PhaseKind,
    Rebuild,
    Scope,
    phase_name,
)
from hopindex.scheduler.canvas import fan_out
from hopindex.scheduler.failed_items import PURGE_PHASE, failed_item_ids, level_phase
from hopindex.scheduler.level_builds import (
    BuildMode,
    build_scope,
    decide_build,
    finish_build,
    has_failed_items,
)
from hopindex.scheduler.lifecycle import job_succeeded, start_phase
from hopindex.scheduler.progress import batched
from hopindex.scheduler.runtime import Runtime
from hopindex.scheduler.task_names import (
    AFTER_PHASE,
    EMBED,
    FINALIZE,
    PHASE_TASKS,
    PURGE,
    START_STEP,
)

log = get_logger(__name__)


def start_step(runtime: Runtime, job_id: str, index: str, *, position: int, level: int,
               scope: Scope) -> None:
    """Fan out phase ``position`` (at ``level`` for a levels phase); past the last
    phase, the job's finalize step."""
    method = runtime.index_method(index)
    state = runtime.backends.state
    while position < len(method.phases):
        phase = method.phases[position]
        qualified = phase_name(method.name, phase)
        context = runtime.phase_context(index, phase.name)
        step = qualified
        if isinstance(phase, DocumentsPhase):
            items = sorted(set(phase.select(context, scope)))
            size = runtime.settings.stage1_batch_docs * phase.batch_scale
        elif isinstance(phase, GroupsPhase):
            # Keys an earlier job failed for good are planned again by every job, so the
            # next ingest brings them back even when no document changed.
            items = sorted(set(scope.touched.get(phase.namespace, ()))
                           | set(failed_item_ids(state, index, qualified)))
            size = runtime.settings.stage2_batch_entities
        else:
            step = level_phase(qualified, level)
            planned = _plan_level(context, job_id, phase, level, scope)
            if planned is None:
                position, level = position + 1, 0
                continue
            if not planned:
                level += 1
                continue
            items = planned
            size = runtime.settings.stage2_batch_entities
        if not start_phase(runtime, job_id, step, qualified, len(items), kind=phase.kind.value):
            return
        log.info("phase_planned", job_id=job_id, index=index, phase=step, items=len(items))
        header = [runtime.signature(PHASE_TASKS[phase.kind], job_id, index, qualified, level,
                                    batch) for batch in batched(items, size)]
        fan_out(runtime, job_id, step, header,
                runtime.signature(AFTER_PHASE, job_id, index, position, level))
        return
    fan_out(runtime, job_id, "finalize-send", [],
            runtime.signature(FINALIZE, job_id, index, immutable=True))


def keep_scope(runtime: Runtime, job_id: str, scope: Scope) -> None:
    """Store the job's scope, for its steps to read (``job_scope``)."""
    runtime.backends.state.put_job_scope(job_id, scope.as_dict())


def job_scope(runtime: Runtime, job_id: str) -> Scope:
    """The job's scope as last kept; empty for a job that kept none (a delete of an
    index never built) or whose records are gone (it ended: its steps claim nothing)."""
    stored = runtime.backends.state.get_job_scope(job_id)
    return Scope.from_dict(stored) if stored is not None else Scope()


def start_steps(runtime: Runtime, job_id: str, index: str, scope: Scope) -> None:
    """Keep the job's scope and fan out its first step here."""
    keep_scope(runtime, job_id, scope)
    start_step(runtime, job_id, index, position=0, level=0, scope=scope)


def first_step(runtime: Runtime, job_id: str, index: str, scope: Scope) -> Any:
    """Keep the job's scope; the signature of its first step, for a fan-out's callback."""
    keep_scope(runtime, job_id, scope)
    return runtime.signature(START_STEP, job_id, index, 0, 0, immutable=True)


def _plan_level(context: PhaseContext, job_id: str, phase: LevelsPhase, level: int,
                scope: Scope) -> list[str] | None:
    """The items of levels ``phase`` at ``level``: what its planner plans and what failed
    there before. None: the phase is over for this job; empty: nothing at this level,
    but items of a higher level failed before and are planned again (a job with nothing
    else to do finishes a partial tree)."""
    state, index, qualified = context.state, context.index, context.phase
    on_request = phase.rebuild is Rebuild.ON_REQUEST
    if level >= phase.max_levels:
        log.warning("levels_bounded", job_id=job_id, index=index, phase=qualified,
                    max_levels=phase.max_levels)
        if on_request:
            finish_build(state, index, job_id, qualified)
        return None
    seen: Scope | None = scope
    if on_request:
        if level == 0 and decide_build(state, index, job_id, phase, qualified=qualified,
                                       scope=scope, settings=context.settings
                                       ) is BuildMode.SKIP:
            return None
        # None: the job only builds the failed items again (BuildMode.FINISH).
        seen = build_scope(state, index, job_id, qualified, scope)
    planned = phase.plan(context, level, seen) if seen is not None else []
    items = sorted(set(planned) | set(failed_item_ids(state, index,
                                                      level_phase(qualified, level))))
    if items or has_failed_items(state, index, qualified, above=level):
        return items
    if on_request:
        finish_build(state, index, job_id, qualified)
    return None


def after_phase(runtime: Runtime, results: list[dict[str, Any]], job_id: str, index: str, *,
                position: int, level: int) -> None:
    """Embed what the phase wrote and purge what it replaced, then start the next step
    (at once when there is nothing to embed or purge).

    The keys the phase touched join the kept scope. Run twice (a redelivered
    callback), the union is the same, so the scope is too."""
    method = runtime.index_method(index)
    phase = method.phases[position]
    scope = job_scope(runtime, job_id)
    # Merged first and sorted once: touching the scope once per task result re-sorted
    # everything merged so far each time, which grew with the square of the corpus.
    touched: dict[str, set[str]] = {}
    for result in results:
        for namespace, keys in result.get("touched", {}).items():
            touched.setdefault(namespace, set()).update(keys)
    if any(touched.values()):
        scope.touch(touched)
        keep_scope(runtime, job_id, scope)
    following = (position, level + 1) if phase.kind is PhaseKind.LEVELS else (position + 1, 0)
    qualified = phase_name(method.name, phase)
    step = level_phase(qualified, level) if phase.kind is PhaseKind.LEVELS else qualified
    if embed_then(runtime, f"embed:{step}", job_id, index, results=results,
                  callback=runtime.signature(START_STEP, job_id, index, *following,
                                             immutable=True)):
        return
    start_step(runtime, job_id, index, position=following[0], level=following[1], scope=scope)


def embed_then(runtime: Runtime, step: str, job_id: str, index: str, *,
               results: list[dict[str, Any]], callback: Any) -> bool:
    """Fan out embed batches of units of similar length and the purge of stale units,
    then run ``callback``; False (nothing sent) when there is nothing to embed or purge.

    The embedder pads each batch to its longest text; batches cut from a
    length-sorted list waste almost no padding, which made the 2Wiki ingest's
    embedding phase about as fast as one call over every text at once.
    """
    state = runtime.backends.state
    sized = sorted(chain.from_iterable(r["units"] for r in results),
                   key=lambda pair: (-pair[1], pair[0]))
    unit_ids = list(dict.fromkeys(unit_id for unit_id, _ in sized))
    job = state.get_job(job_id)
    # Units replaced by jobs that ended before purging them are purged here too.
    leftover = failed_item_ids(state, index, PURGE_PHASE)
    stale = sorted(set(chain.from_iterable(r.get("stale", []) for r in results))
                   | set(job.stale_units if job is not None else ()) | set(leftover))
    if not unit_ids and not stale:
        return False
    if not start_phase(runtime, job_id, step, Stage.EMBED.value, len(unit_ids)):
        return True
    size = runtime.settings.embed_batch_units
    fan_out(runtime, job_id, step,
            [runtime.signature(EMBED, job_id, index, b, immutable=True)
             for b in batched(unit_ids, size)]
            + [runtime.signature(PURGE, job_id, index, b, immutable=True)
               for b in batched(stale, size)], callback)
    return True


def finalize(runtime: Runtime, job_id: str, index: str) -> None:
    if not start_phase(runtime, job_id, "finalize", Stage.FINALIZE.value, 0):
        return
    _mark_indexed(runtime, job_id, index, job_scope(runtime, job_id))
    job_succeeded(runtime, job_id, index)


def _mark_indexed(runtime: Runtime, job_id: str, index: str, scope: Scope) -> None:
    """Give the job's documents their content hash, the mark of a finished document.

    Until now they carried an empty one (see ``submit_ingest``): a job that dies
    at any step before this leaves them to be redone by the next ingest, where
    unchanged units are found by id and not embedded twice. Documents a documents
    phase failed keep the empty hash so the next ingest tries them again.

    The mark is the hash of the text the job read (``scope.hashes``), given only
    when the stored text still has it: text stored by anyone else meanwhile was not
    what the units were built from, so it stays to be redone, never marked done.
    """
    state = runtime.backends.state
    job = state.get_job(job_id)
    failed = ({e.item for e in job.errors if job.phases.get(e.stage) == PhaseKind.DOCUMENTS}
              if job is not None else set())
    marked = []
    for document in state.get_documents(index, scope.doc_ids):
        if document.doc_id in failed:
            continue
        stored = content_hash(document.title, document.text)
        read = scope.hashes.get(document.doc_id, stored)
        if stored != read:
            log.warning("document_changed_under_job", job_id=job_id, index=index,
                        doc_id=document.doc_id)
            continue
        marked.append(replace(document, content_hash=stored))
    state.put_documents(marked)
