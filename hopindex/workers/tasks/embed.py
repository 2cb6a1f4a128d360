"""Embed-queue tasks: the only writers of the vector and keyword engines.

``embed`` writes vectors and postings for a batch of units, skipping ones already
written; ``purge`` removes stale units from every store.
"""

from __future__ import annotations

import time

from hopindex.backends.embedder.metering import metered_embeddings, report_embedding_usage
from hopindex.backends.protocols import KeywordRecord, UnitPayload, VectorRecord
from hopindex.core.embedding_usage import EmbeddingUsage
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, Stage
from hopindex.core.tracing import span, spans
from hopindex.scheduler.failed_items import PURGE_PHASE
from hopindex.scheduler.lifecycle import maybe_progress
from hopindex.scheduler.progress import is_cancelled, settle
from hopindex.scheduler.task_names import EMBED, PURGE
from hopindex.workers.app import app
from hopindex.workers.runtime import current_runtime
from hopindex.workers.writes import delete_units_everywhere

log = get_logger(__name__)


@app.task(name=EMBED)  # type: ignore[untyped-decorator]  # celery is untyped
def embed(job_id: str, index: str, unit_ids: list[str]) -> int:
    """Returns how many units were embedded (0 when all were already)."""
    runtime = current_runtime()
    backends = runtime.backends
    state = backends.state
    if is_cancelled(state, job_id):
        return 0
    started = time.perf_counter()
    todo = state.unembedded_units(index, unit_ids)
    units = state.get_units(index, todo)
    encode_s = 0.0
    embedding = EmbeddingUsage()
    if units:
        t0 = time.perf_counter()
        # Units may share a text (two bridge entities quoting the same sentences):
        # each distinct text is embedded once.
        distinct = list(dict.fromkeys(u.text for u in units))
        row_of = {text: row for row, text in enumerate(distinct)}
        with metered_embeddings() as meter, span("embed_texts", {
                spans.ITEMS: len(distinct),
                "hopindex.embedder.model": backends.embedder.model_name}):
            vectors = backends.embedder.embed_texts(distinct)[[row_of[u.text] for u in units]]
        encode_s = time.perf_counter() - t0
        # Priced as the calls are made, so a later price change leaves the job's cost be.
        embedding = meter.usage(runtime.settings.embedding_price_per_mtok)
        report_embedding_usage(runtime.settings, backends.embedder.model_name, embedding)
        with span("vector_write", {spans.ITEMS: len(units)}):
            backends.vectors.ensure_index(index, backends.embedder.dimension)
            backends.vectors.upsert_vectors(index, [
                VectorRecord(unit_id=u.unit_id, vector=v, payload=UnitPayload.of(u))
                for u, v in zip(units, vectors, strict=True)])
        with span("keyword_write", {spans.ITEMS: len(units)}):
            backends.keywords.ensure_index(index)
            backends.keywords.index_units(index, [
                KeywordRecord(unit_id=u.unit_id, text=u.text, payload=UnitPayload.of(u))
                for u in units])
        state.mark_embedded(index, [u.unit_id for u in units])

    def change(job: Job) -> None:
        counts = job.count(Stage.EMBED)
        counts.done += len(units)
        counts.skipped += len(unit_ids) - len(units)
        job.units_embedded += len(units)
        job.embedding.add(embedding)

    job, _ = settle(state, job_id, change)
    maybe_progress(runtime, job)
    log.info("stage_finished", stage="embed", job_id=job_id, index=index, units=len(units),
             skipped=len(unit_ids) - len(units), encode_s=round(encode_s, 3),
             duration_s=round(time.perf_counter() - started, 3))
    return len(units)


@app.task(name=PURGE)  # type: ignore[untyped-decorator]  # celery is untyped
def purge(job_id: str, index: str, unit_ids: list[str]) -> int:
    """Delete units a stage replaced, engines first (see workers/writes.py); returns how
    many were given. Deleting an id twice is a no-op, so redelivery is harmless.

    Runs even for a cancelled job: the units it names are already unreachable."""
    started = time.perf_counter()
    backends = current_runtime().backends
    delete_units_everywhere(backends, index, unit_ids)
    backends.state.clear_failed_items(index, PURGE_PHASE, unit_ids)
    # Nothing to count, but the run reports like every task: it is progress to the
    # reaper, and what tells a re-drive this purge needs no re-sending.
    settle(backends.state, job_id, lambda job: None)
    log.info("stage_finished", stage="purge", job_id=job_id, index=index, units=len(unit_ids),
             duration_s=round(time.perf_counter() - started, 3))
    return len(unit_ids)
