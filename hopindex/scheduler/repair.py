"""Repair: a job that redoes an index's outstanding work with no new input.

It runs the ingest pipeline over the documents that are stored but not fully
indexed (their stage 1 failed, or their job ended early); stage 2 plans every
failed bridge entity again, as every job does (``plan_stage2``). The index must
have no running job: a repair racing an ingest would redo work that ingest is
doing.
"""

from __future__ import annotations

import time

from hopindex.core.errors import IndexBusyError
from hopindex.core.ids import job_id as new_job_id
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobKind, JobState, Stage
from hopindex.scheduler.canvas import fan_out
from hopindex.scheduler.control import after_stage1
from hopindex.scheduler.lifecycle import job_started
from hopindex.scheduler.outstanding import IndexStatus, outstanding_work
from hopindex.scheduler.recovery import owning
from hopindex.scheduler.submit import ensure_index, planning
from hopindex.workers.progress import batched
from hopindex.workers.runtime import Runtime
from hopindex.workers.tasks.stage1 import stage1

log = get_logger(__name__)


def submit_repair(runtime: Runtime, index: str, job_id: str | None = None) -> Job:
    """Create the repair job (``job_id``: the caller's, else a new one) and launch it."""
    job_id = job_id or new_job_id()
    state = runtime.backends.state
    with owning(runtime.settings) as owner, planning(runtime, job_id, JobKind.REPAIR):
        ensure_index(runtime, index)
        work = outstanding_work(state, index)
        if work.status is IndexStatus.BUILDING:
            raise IndexBusyError(f"index {index!r} has running jobs "
                                 f"({', '.join(work.running_jobs)}); repair once they end")
        job = Job(job_id=job_id, index=index, kind=JobKind.REPAIR, state=JobState.RUNNING,
                  started_at=time.time(), owner=owner)
        job.counts[Stage.STAGE1].total = len(work.documents)
        state.create_job(job)
        log.info("repair_submitted", job_id=job_id, index=index,
                 documents=len(work.documents), failed=work.failed_per_phase())
        job_started(runtime, job)
        header = [stage1.s(job_id, index, b)
                  for b in batched(work.documents, runtime.settings.stage1_batch_docs)]
        fan_out(runtime, job_id, "stage1", header,
                after_stage1.s(job_id, index, work.documents, []))
    return state.get_job(job_id) or job
