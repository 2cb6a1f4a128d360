"""Repair: a job that redoes an index's outstanding work with no new input.

It runs the index method's phases over the documents that are stored but not
fully indexed (a documents phase failed them, or their job ended early); groups
and levels phases plan every failed key again, as every job does. The index must
have no running job: a repair racing an ingest would redo work that ingest is
doing.
"""

from __future__ import annotations

import time

from hopindex.core.budget import index_default
from hopindex.core.errors import IndexBusyError
from hopindex.core.ids import job_id as new_job_id
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobKind, JobState
from hopindex.methods.plugin import Scope
from hopindex.scheduler.lifecycle import job_started
from hopindex.scheduler.outstanding import IndexStatus, outstanding_work
from hopindex.scheduler.pipeline import start_step
from hopindex.scheduler.recovery import owning
from hopindex.scheduler.runtime import Runtime
from hopindex.scheduler.submit import check_budget, ensure_index, planning

log = get_logger(__name__)


def submit_repair(runtime: Runtime, index: str, job_id: str | None = None) -> Job:
    """Create the repair job (``job_id``: the caller's, else a new one) and launch it."""
    job_id = job_id or new_job_id()
    state = runtime.backends.state
    with owning(runtime.settings) as owner, planning(runtime, job_id, JobKind.REPAIR):
        info = ensure_index(runtime, index)
        work = outstanding_work(state, index)
        if work.status is IndexStatus.BUILDING:
            raise IndexBusyError(f"index {index!r} has running jobs "
                                 f"({', '.join(work.running_jobs)}); repair once they end")
        job = Job(job_id=job_id, index=index, kind=JobKind.REPAIR, state=JobState.RUNNING,
                  started_at=time.time(), owner=owner)
        # Its LLM calls count against the index's default budget, as an ingest's do.
        job.budget = index_default(info.options)
        check_budget(runtime, job.budget)
        state.create_job(job)
        log.info("repair_submitted", job_id=job_id, index=index,
                 documents=len(work.documents), failed=work.failed_per_phase())
        job_started(runtime, job)
        start_step(runtime, job_id, index, position=0, level=0,
                   scope=Scope(doc_ids=list(work.documents)))
    return state.get_job(job_id) or job
