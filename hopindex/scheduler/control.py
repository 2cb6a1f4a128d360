"""Control tasks: the chord callbacks that plan each next phase of a job.

validate → stage1 → embed passages → link → plan stage 2 → stage2 → embed bridges → finalize

Each callback first claims its phase on the job record (``start_phase``): a
callback delivered twice, or one arriving after the job was cancelled or failed,
schedules nothing.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import chain
from typing import Any

from hopindex.core.ids import content_hash
from hopindex.core.logging import get_logger
from hopindex.core.models import Stage
from hopindex.methods.indexrag.units import METHOD as INDEXRAG
from hopindex.scheduler.canvas import fan_out
from hopindex.scheduler.lifecycle import job_succeeded, start_phase
from hopindex.scheduler.linking import documents_to_relink
from hopindex.workers.app import app
from hopindex.workers.failed_items import PURGE_PHASE, failed_item_ids
from hopindex.workers.progress import batched
from hopindex.workers.runtime import current_runtime
from hopindex.workers.tasks.embed import embed, purge
from hopindex.workers.tasks.link import link
from hopindex.workers.tasks.stage2 import stage2

log = get_logger(__name__)


def _embed_then(phase: str, job_id: str, index: str, results: list[dict[str, Any]],
                callback: Any) -> None:
    """Fan out embed batches of units of similar length and the purge of stale units,
    then run ``callback``.

    The embedder pads each batch to its longest text; batches cut from a
    length-sorted list waste almost no padding, which made the 2Wiki ingest's
    embedding phase about as fast as one call over every text at once.
    """
    runtime = current_runtime()
    sized = sorted(chain.from_iterable(r["units"] for r in results),
                   key=lambda pair: (-pair[1], pair[0]))
    unit_ids = [unit_id for unit_id, _ in sized]
    job = runtime.backends.state.get_job(job_id)
    # Units replaced by jobs that ended before purging them are purged here too.
    leftover = failed_item_ids(runtime.backends.state, index, PURGE_PHASE)
    stale = sorted(set(chain.from_iterable(r.get("stale", []) for r in results))
                   | set(job.stale_units if job is not None else ()) | set(leftover))
    if not start_phase(runtime, job_id, phase, Stage.EMBED, len(unit_ids)):
        return
    size = runtime.settings.embed_batch_units
    fan_out(runtime, job_id, phase,
            [embed.si(job_id, index, b) for b in batched(unit_ids, size)]
            + [purge.si(job_id, index, b) for b in batched(stale, size)], callback)


@app.task(name="hopindex.control.after_stage1")  # type: ignore[untyped-decorator]  # untyped
def after_stage1(results: list[dict[str, Any]], job_id: str, index: str,
                 job_doc_ids: list[str], dropped_titles: list[str]) -> None:
    touched = sorted(set(chain.from_iterable(r["touched"] for r in results)))
    _embed_then("embed-stage1", job_id, index, results,
                start_linking.si(job_id, index, touched, job_doc_ids, dropped_titles))


@app.task(name="hopindex.control.start_linking")  # type: ignore[untyped-decorator]  # untyped
def start_linking(job_id: str, index: str, touched: list[str], job_doc_ids: list[str],
                  dropped_titles: list[str]) -> None:
    runtime = current_runtime()
    # IndexRAG's entities come from the model, not from titles: nothing to link.
    rescan = ([] if runtime.index_method(index) == INDEXRAG else
              documents_to_relink(runtime.backends, index, job_doc_ids, dropped_titles,
                                  runtime.settings.tau))
    if not start_phase(runtime, job_id, "link", Stage.LINK, len(rescan)):
        return
    batches = batched(rescan, runtime.settings.stage1_batch_docs * 4)
    fan_out(runtime, job_id, "link", [link.s(job_id, index, b) for b in batches],
            plan_stage2.s(job_id, index, sorted(set(touched) | set(dropped_titles)),
                          job_doc_ids))


@app.task(name="hopindex.control.plan_stage2")  # type: ignore[untyped-decorator]  # untyped
def plan_stage2(link_results: list[list[str]], job_id: str, index: str,
                touched: list[str], job_doc_ids: list[str]) -> None:
    runtime = current_runtime()
    # Entities an earlier job failed for good are planned again by every job, so the
    # next ingest brings them back even when no document changed.
    outstanding = failed_item_ids(runtime.backends.state, index, Stage.STAGE2.value)
    entities = sorted(set(touched).union(*link_results, outstanding))
    if not start_phase(runtime, job_id, "stage2", Stage.STAGE2, len(entities)):
        return
    log.info("stage2_planned", job_id=job_id, index=index, entities=len(entities),
             outstanding=len(outstanding))
    batches = batched(entities, runtime.settings.stage2_batch_entities)
    fan_out(runtime, job_id, "stage2", [stage2.s(job_id, index, b) for b in batches],
            after_stage2.s(job_id, index, job_doc_ids))


@app.task(name="hopindex.control.after_stage2")  # type: ignore[untyped-decorator]  # untyped
def after_stage2(results: list[dict[str, Any]], job_id: str, index: str,
                 job_doc_ids: list[str]) -> None:
    _embed_then("embed-stage2", job_id, index, results, finalize.si(job_id, index, job_doc_ids))


@app.task(name="hopindex.control.finalize")  # type: ignore[untyped-decorator]  # untyped
def finalize(job_id: str, index: str, job_doc_ids: list[str]) -> None:
    runtime = current_runtime()
    if not start_phase(runtime, job_id, "finalize", Stage.FINALIZE, 0):
        return
    _mark_indexed(job_id, index, job_doc_ids)
    job_succeeded(runtime, job_id, index)


def _mark_indexed(job_id: str, index: str, doc_ids: list[str]) -> None:
    """Give the job's documents their content hash, the mark of a finished document.

    Until now they carried an empty one (see ``submit_ingest``): a job that dies
    at any stage before this leaves them to be redone by the next ingest, where
    unchanged units are found by id and not embedded twice. Documents whose
    stage 1 failed keep the empty hash so the next ingest tries them again.
    """
    state = current_runtime().backends.state
    job = state.get_job(job_id)
    failed = ({e.item for e in job.errors if e.stage is Stage.STAGE1}
              if job is not None else set())
    documents = [d for d in state.get_documents(index, doc_ids) if d.doc_id not in failed]
    state.put_documents([replace(d, content_hash=content_hash(d.title, d.text))
                         for d in documents])


@app.task(name="hopindex.control.ping", job_bound=False)  # type: ignore[untyped-decorator]  # untyped
def ping(value: int) -> int:
    """A task that does nothing: measures what the queue alone can carry (benchmarks)."""
    return value
