"""Stage 2 task: (re)build or remove the bridge unit of each affected entity."""

from __future__ import annotations

import time
from typing import Any

from hopindex.core.logging import get_logger
from hopindex.core.models import Job, Stage, Unit
from hopindex.methods.extractive.stage2 import build_bridge_unit
from hopindex.workers.app import app
from hopindex.workers.progress import is_cancelled
from hopindex.workers.runtime import current_runtime
from hopindex.workers.writes import delete_units_everywhere

log = get_logger(__name__)


@app.task(name="hopindex.stage2")  # type: ignore[untyped-decorator]  # celery is untyped
def stage2(job_id: str, index: str, entities: list[str]) -> dict[str, Any]:
    """Returns the bridge units written as ``[unit_id, characters]``; stale bridge units
    are deleted everywhere."""
    runtime = current_runtime()
    state = runtime.backends.state
    if is_cancelled(state, job_id):
        return {"units": []}
    started = time.perf_counter()
    policy = runtime.bridge_policy
    mentions = state.mentions_of_entities(index, entities)
    doc_ids_of = {e: sorted({m.doc_id for m in mentions.get(e, [])}) for e in entities}
    bridged = [e for e in entities if policy.is_bridge(len(doc_ids_of[e]))]
    needed = sorted({d for e in bridged for d in doc_ids_of[e]})
    documents = {d.doc_id: d for d in state.get_documents(index, needed)}
    analyses = state.get_analyses(index, needed)
    built: list[Unit] = []
    owner: dict[str, str] = {}
    for entity in bridged:
        unit = build_bridge_unit(index, entity,
                                 [documents[d] for d in doc_ids_of[entity] if d in documents],
                                 analyses, policy)
        if unit is not None:
            built.append(unit)
            owner[entity] = unit.unit_id
    # Write new units before repointing the catalogue, and delete stale ones last,
    # so a crash at any point leaves the previous bridge or the new one findable.
    state.put_units(built)
    stale: list[str] = []
    removed = 0
    for entity in entities:
        new_ids = [owner[entity]] if entity in owner else []
        previous = state.replace_bridge_units(index, entity, new_ids)
        stale.extend(u for u in previous if u not in new_ids)
        if previous and not new_ids:
            removed += 1
    delete_units_everywhere(runtime.backends, index, stale)

    def change(job: Job) -> None:
        counts = job.counts[Stage.STAGE2]
        counts.done += len(built)
        counts.skipped += len(entities) - len(built)
        job.bridge_entities_recomputed += len(built)
        job.bridge_entities_removed += removed

    state.update_job(job_id, change)
    log.info("stage_finished", stage="stage2", job_id=job_id, index=index,
             entities=len(entities), bridges=len(built), removed=removed,
             duration_s=round(time.perf_counter() - started, 3))
    return {"units": [[u.unit_id, len(u.text)] for u in built]}
