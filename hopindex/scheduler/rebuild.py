"""Rebuild: a job that builds an index's on-request levels phases again, no new input.

A levels phase built only on request (``Rebuild.ON_REQUEST``, a global tree) is left
stale by the jobs that change documents (scheduler/level_builds.py). A rebuild job
runs the index method's phases with no documents and every such phase named in
``Scope.rebuild``: those are built again over the documents as they are now; the
other phases do what any job with no documents does (plan the items that failed
earlier). Like every job it waits for its turn on the index (scheduler/writers.py).
"""

from __future__ import annotations

from hopindex.core.budget import index_default
from hopindex.core.errors import InvalidInputError
from hopindex.core.ids import job_id as new_job_id
from hopindex.core.llm_modes import job_mode
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobKind
from hopindex.core.settings import LlmMode
from hopindex.methods.plugin import Scope, phase_name
from hopindex.scheduler.corpus import index_corpus_tokens
from hopindex.scheduler.level_builds import on_request_phases
from hopindex.scheduler.lifecycle import job_started
from hopindex.scheduler.pipeline import start_steps
from hopindex.scheduler.recovery import owning
from hopindex.scheduler.runtime import Runtime
from hopindex.scheduler.submit import check_budget, ensure_index, new_job, planning
from hopindex.scheduler.writers import Announce, WaitPolicy, enter_line

log = get_logger(__name__)


def submit_rebuild(runtime: Runtime, index: str, job_id: str | None = None, *,
                   wait: WaitPolicy = WaitPolicy.WAIT, announce: Announce | None = None,
                   llm_mode: LlmMode | None = None) -> Job:
    """Create the rebuild job (``job_id``: the caller's, else a new one) and launch it at
    its turn on the index. ``llm_mode``: how its LLM calls are made (None: the index's
    default, else the setting's)."""
    job_id = job_id or new_job_id()
    state = runtime.backends.state
    with owning(runtime.settings) as owner, planning(runtime, job_id, JobKind.REBUILD):
        info = ensure_index(runtime, index)
        method = runtime.index_method(index)
        if not on_request_phases(method):
            raise InvalidInputError(
                f"index {index!r} is built with {info.method!r}, which builds every part of "
                "an index in every job: nothing to rebuild (only a method with a levels "
                "phase built on request, such as a global tree, has one)", where="method")
        job = new_job(job_id, index, JobKind.REBUILD, owner)
        # Its LLM calls count against the index's default budget, as an ingest's do.
        job.budget = index_default(info.options)
        check_budget(runtime, job.budget)
        job.llm_mode = job_mode(llm_mode, info.options, runtime.settings.llm_mode).mode
        if (started := enter_line(runtime, job, wait, announce)) is not None:
            begin_rebuild(runtime, started)
    return state.get_job(job_id) or job


def begin_rebuild(runtime: Runtime, job: Job) -> None:
    """At the job's turn (``job``: as its turn was claimed): build the on-request phases
    again over the documents as they are now."""
    method = runtime.index_method(job.index)
    phases = [phase_name(method.name, p) for p in on_request_phases(method)]
    log.info("rebuild_submitted", job_id=job.job_id, index=job.index, phases=phases)
    corpus = index_corpus_tokens(runtime.backends.state, job.index, method)

    def count_corpus(record: Job) -> None:
        record.corpus_tokens = corpus

    job = runtime.backends.state.update_job(job.job_id, count_corpus)
    job_started(runtime, job)
    start_steps(runtime, job.job_id, job.index, Scope(rebuild=phases))
