"""Stage 2 task: (re)build or remove the bridge units of each affected entity.

``extractive``: one bridge unit per entity from its documents' sentences. ``indexrag``:
one LLM call per entity, one unit per bridging fact.
"""

from __future__ import annotations

import time
from typing import Any

from hopindex.backends.llm.usage import UsageMeter
from hopindex.backends.protocols import JobStore
from hopindex.core.logging import get_logger
from hopindex.core.models import ItemError, Job, Stage, Unit, UnitKind
from hopindex.methods.extractive.stage2 import build_bridge_unit
from hopindex.methods.indexrag.indexing import plan_bridges, write_bridging_facts
from hopindex.methods.indexrag.units import METHOD as INDEXRAG
from hopindex.methods.indexrag.units import doc_facts_from_units
from hopindex.scheduler.lifecycle import maybe_progress
from hopindex.workers.app import app
from hopindex.workers.failed_items import settle_items
from hopindex.workers.progress import current_task_key, is_cancelled, settle
from hopindex.workers.runtime import Runtime, current_runtime

log = get_logger(__name__)

# Units built per entity; entities that failed for good are absent and keep their bridges.
_Built = dict[str, list[Unit]]


@app.task(name="hopindex.stage2")  # type: ignore[untyped-decorator]  # celery is untyped
def stage2(job_id: str, index: str, entities: list[str]) -> dict[str, Any]:
    """Returns the bridge units written as ``[unit_id, characters]`` and the ``stale``
    bridge units the embed queue must purge."""
    runtime = current_runtime()
    state = runtime.backends.state
    if is_cancelled(state, job_id):
        return {"units": [], "stale": []}
    started = time.perf_counter()
    usage = UsageMeter()
    if runtime.index_method(index) == INDEXRAG:
        built_of, errors = _indexrag(runtime, index, entities, usage)
    else:
        built_of, errors = _extractive(runtime, index, entities), []
    failed = {e.item for e in errors}
    built = [u for units in built_of.values() for u in units]
    # Write new units before repointing the catalogue, and purge stale ones last (on
    # the embed queue), so a crash at any point leaves the previous bridge or the new
    # one findable.
    state.put_units(built)
    settled = [e for e in entities if e not in failed]
    new_of = {e: [u.unit_id for u in built_of.get(e, [])] for e in settled}
    current = state.bridge_units_of_entities(index, settled)
    stale = sorted({u for e in settled for u in current.get(e, []) if u not in new_of[e]})
    # Once repointed, the replaced ids are known nowhere else: note them on the job
    # first, so a run killed after repointing still has them purged (see control.py).
    _note_stale(state, job_id, stale)
    removed = 0
    for entity in settled:
        previous = state.replace_bridge_units(index, entity, new_of[entity])
        if previous and not new_of[entity]:
            removed += 1
    # After the catalogue points at the new units: a crash before this leaves the
    # entity outstanding, and redoing it is harmless.
    settle_items(state, index, job_id, Stage.STAGE2, errors=errors, completed=settled)
    with_units = sum(1 for units in built_of.values() if units)
    llm_usage = usage.snapshot()

    def change(job: Job) -> None:
        counts = job.counts[Stage.STAGE2]
        counts.done += with_units
        counts.failed += len(failed)
        counts.skipped += len(entities) - with_units - len(failed)
        job.errors.extend(errors)
        job.bridge_entities_recomputed += with_units
        job.bridge_entities_removed += removed
        job.add_llm_usage(llm_usage)

    job, _ = settle(state, job_id, change)
    maybe_progress(runtime, job)
    log.info("stage_finished", stage="stage2", job_id=job_id, index=index,
             entities=len(entities), bridges=len(built), removed=removed, failed=len(failed),
             llm_calls=usage.total().calls, duration_s=round(time.perf_counter() - started, 3))
    return {"units": [[u.unit_id, len(u.text)] for u in built], "stale": sorted(stale)}


def _note_stale(state: JobStore, job_id: str, stale: list[str]) -> None:
    if not stale:
        return

    def change(job: Job) -> None:
        job.stale_units.extend(u for u in stale if u not in job.stale_units)

    settle(state, job_id, change, key=f"stale-{current_task_key()}")


def _document_sets(runtime: Runtime, index: str, entities: list[str]
                   ) -> tuple[list[str], dict[str, list[str]]]:
    """The entities inside the df window, and the documents mentioning each."""
    mentions = runtime.backends.state.mentions_of_entities(index, entities)
    doc_ids_of = {e: sorted({m.doc_id for m in mentions.get(e, [])}) for e in entities}
    bridged = [e for e in entities if runtime.bridge_policy.is_bridge(len(doc_ids_of[e]))]
    return bridged, doc_ids_of


def _extractive(runtime: Runtime, index: str, entities: list[str]) -> _Built:
    state = runtime.backends.state
    bridged, doc_ids_of = _document_sets(runtime, index, entities)
    needed = sorted({d for e in bridged for d in doc_ids_of[e]})
    documents = {d.doc_id: d for d in state.get_documents(index, needed)}
    analyses = state.get_analyses(index, needed)
    built: _Built = {}
    for entity in bridged:
        unit = build_bridge_unit(index, entity,
                                 [documents[d] for d in doc_ids_of[entity] if d in documents],
                                 analyses, runtime.bridge_policy)
        if unit is not None:
            built[entity] = [unit]
    return built


def _indexrag(runtime: Runtime, index: str, entities: list[str], usage: UsageMeter
              ) -> tuple[_Built, list[ItemError]]:
    bridged, doc_ids_of = _document_sets(runtime, index, entities)
    needed = sorted({d for e in bridged for d in doc_ids_of[e]})
    facts = doc_facts_from_units(runtime.backends.state.units_of_documents(
        index, needed, kinds=(UnitKind.AKU,)))
    planned = plan_bridges(bridged, {e: [facts[d] for d in doc_ids_of[e] if d in facts]
                                     for e in bridged})
    if not planned:
        return {}, []
    outcomes, errors = write_bridging_facts(runtime.require_llm(index), index, planned, usage)
    return {o.entity: o.units for o in outcomes}, errors
