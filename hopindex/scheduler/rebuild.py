"""Rebuild: a job that builds an index's on-request levels phases again, no new input.

A levels phase built only on request (``Rebuild.ON_REQUEST``, a global tree) is left
stale by the jobs that change documents (scheduler/level_builds.py). A rebuild job
runs the index method's phases with no documents and every such phase named in
``Scope.rebuild``: those are built again over the documents as they are now; the
other phases do what any job with no documents does (plan the items that failed
earlier). The index must have no running job, like a repair.
"""

from __future__ import annotations

import time

from hopindex.core.budget import index_default
from hopindex.core.errors import IndexBusyError, InvalidInputError
from hopindex.core.ids import job_id as new_job_id
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobKind, JobState
from hopindex.methods.plugin import Scope, phase_name
from hopindex.scheduler.level_builds import on_request_phases
from hopindex.scheduler.lifecycle import job_started
from hopindex.scheduler.outstanding import IndexStatus, outstanding_work
from hopindex.scheduler.pipeline import start_step
from hopindex.scheduler.recovery import owning
from hopindex.scheduler.runtime import Runtime
from hopindex.scheduler.submit import check_budget, ensure_index, planning

log = get_logger(__name__)


def submit_rebuild(runtime: Runtime, index: str, job_id: str | None = None) -> Job:
    """Create the rebuild job (``job_id``: the caller's, else a new one) and launch it."""
    job_id = job_id or new_job_id()
    state = runtime.backends.state
    with owning(runtime.settings) as owner, planning(runtime, job_id, JobKind.REBUILD):
        info = ensure_index(runtime, index)
        method = runtime.index_method(index)
        phases = [phase_name(method.name, p) for p in on_request_phases(method)]
        if not phases:
            raise InvalidInputError(
                f"index {index!r} is built with {info.method!r}, which builds every part of "
                "an index in every job: nothing to rebuild (only a method with a levels "
                "phase built on request, such as a global tree, has one)", where="method")
        work = outstanding_work(state, index)
        if work.status is IndexStatus.BUILDING:
            raise IndexBusyError(f"index {index!r} has running jobs "
                                 f"({', '.join(work.running_jobs)}); rebuild once they end")
        job = Job(job_id=job_id, index=index, kind=JobKind.REBUILD, state=JobState.RUNNING,
                  started_at=time.time(), owner=owner)
        # Its LLM calls count against the index's default budget, as an ingest's do.
        job.budget = index_default(info.options)
        check_budget(runtime, job.budget)
        state.create_job(job)
        log.info("rebuild_submitted", job_id=job_id, index=index, phases=phases)
        job_started(runtime, job)
        start_step(runtime, job_id, index, position=0, level=0, scope=Scope(rebuild=phases))
    return state.get_job(job_id) or job
