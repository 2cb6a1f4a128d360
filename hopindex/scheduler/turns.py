"""Starting a queued job at its turn, from the input its submission kept (with workers).

A job submitted with workers behind another job of its index returns queued, its
input kept in the state store (scheduler/staging.py). When the job ahead ends, the
process that ended it sends the index's ``start_queued`` task (scheduler/lifecycle.py),
which runs :func:`start_next` on a worker; the reaper runs :func:`restart_lines` for a
line whose message was lost. Two starters racing for one job are harmless: the move
from ``queued`` to ``running`` is one atomic update, and only its winner starts it.
"""

from __future__ import annotations

from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobKind, JobState
from hopindex.scheduler.rebuild import begin_rebuild
from hopindex.scheduler.repair import begin_repair
from hopindex.scheduler.runtime import Runtime
from hopindex.scheduler.staging import drop_staged, staged_input
from hopindex.scheduler.submit import begin_delete, begin_ingest, document_of, planning
from hopindex.scheduler.writers import claim_turn, note_place

log = get_logger(__name__)


def start_next(runtime: Runtime, index: str) -> str | None:
    """Start the first job of ``index``'s line when it is queued with its input kept;
    the others learn their new place. Returns the id of the job started."""
    line = runtime.backends.state.open_jobs(index)
    for position, waiting in enumerate(line[1:], start=1):
        if waiting.state is JobState.QUEUED:
            note_place(runtime, waiting.job_id, line[:position])
    if not line:
        return None
    head = line[0]
    if head.state is not JobState.QUEUED or head.staged < 0:
        # Running, paused or cancelling: its own end starts the next. Queued without
        # kept input: the process that submitted it starts it (no broker).
        return None
    started = claim_turn(runtime, head.job_id)
    if started is None:
        return None  # another starter won it, or it was cancelled meanwhile
    log.info("queued_job_started", job_id=head.job_id, index=index, kind=head.kind.value)
    with planning(runtime, head.job_id, head.kind):
        _begin(runtime, started)
    return head.job_id


def _begin(runtime: Runtime, job: Job) -> None:
    state = runtime.backends.state
    records = staged_input(state, job)
    if job.kind is JobKind.INGEST:
        begin_ingest(runtime, job.job_id, job.index,
                     [document_of(job.index, r) for r in records])
    elif job.kind is JobKind.DELETE:
        doc_ids = [str(d) for r in records for d in r.get("doc_ids", [])]
        begin_delete(runtime, job.job_id, job.index, doc_ids)
    elif job.kind is JobKind.REPAIR:
        begin_repair(runtime, job)
    else:
        begin_rebuild(runtime, job)
    drop_staged(state, job)


def restart_lines(runtime: Runtime, indexes: list[str]) -> list[str]:
    """Start the next job of each index whose line stopped moving (the message that
    should have started it was lost); returns the ids started."""
    started = []
    for index in indexes:
        try:
            job_id = start_next(runtime, index)
        except Exception as exc:  # one index's failure must not stop the others
            log.error("queued_job_not_started", index=index,
                      error=f"{type(exc).__name__}: {exc}")
            continue
        if job_id is not None:
            started.append(job_id)
    return started
