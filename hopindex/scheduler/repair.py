"""Repair: a job that redoes an index's outstanding work with no new input.

It runs the index method's phases over the documents that are stored but not
fully indexed (a documents phase failed them, or their job ended early, or their
stored text is not the text their units were built from); groups and levels
phases plan every failed key again, as every job does. Like every job it waits for
its turn on the index (scheduler/writers.py): a repair racing an ingest would redo
work that ingest is doing.
"""

from __future__ import annotations

from dataclasses import replace

from hopindex.core.budget import index_default
from hopindex.core.ids import content_hash
from hopindex.core.ids import job_id as new_job_id
from hopindex.core.llm_modes import job_mode
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobKind
from hopindex.core.settings import LlmMode
from hopindex.methods.plugin import Scope
from hopindex.scheduler.corpus import corpus_tokens
from hopindex.scheduler.lifecycle import job_started
from hopindex.scheduler.outstanding import outstanding_work
from hopindex.scheduler.pipeline import start_steps
from hopindex.scheduler.recovery import owning
from hopindex.scheduler.runtime import Runtime
from hopindex.scheduler.submit import check_budget, ensure_index, new_job, planning
from hopindex.scheduler.writers import Announce, WaitPolicy, enter_line

log = get_logger(__name__)


def submit_repair(runtime: Runtime, index: str, job_id: str | None = None, *,
                  wait: WaitPolicy = WaitPolicy.WAIT, announce: Announce | None = None,
                  llm_mode: LlmMode | None = None) -> Job:
    """Create the repair job (``job_id``: the caller's, else a new one) and launch it at
    its turn on the index. ``llm_mode``: how its LLM calls are made (None: the index's
    default, else the setting's)."""
    job_id = job_id or new_job_id()
    state = runtime.backends.state
    with owning(runtime.settings) as owner, planning(runtime, job_id, JobKind.REPAIR):
        info = ensure_index(runtime, index)
        job = new_job(job_id, index, JobKind.REPAIR, owner)
        # Its LLM calls count against the index's default budget, as an ingest's do.
        job.budget = index_default(info.options)
        check_budget(runtime, job.budget)
        job.llm_mode = job_mode(llm_mode, info.options, runtime.settings.llm_mode).mode
        if (started := enter_line(runtime, job, wait, announce)) is not None:
            begin_repair(runtime, started)
    return state.get_job(job_id) or job


def begin_repair(runtime: Runtime, job: Job) -> None:
    """At the job's turn (``job``: as its turn was claimed): redo the documents not fully
    indexed, text stored that no unit was built from included, and plan every failed
    item again."""
    job_id, index = job.job_id, job.index
    state = runtime.backends.state
    work = outstanding_work(state, index, verify=True)
    documents = state.get_documents(index, work.documents)
    # Text marked indexed that its units were not built from: unmarked first, so a
    # repair that dies part-way leaves it outstanding still.
    state.put_documents([replace(d, content_hash="") for d in documents if d.content_hash])
    corpus = corpus_tokens(runtime.index_method(index), documents)

    def count_corpus(record: Job) -> None:
        record.corpus_tokens = corpus

    job = state.update_job(job_id, count_corpus)
    log.info("repair_submitted", job_id=job_id, index=index,
             documents=len(work.documents), failed=work.failed_per_phase())
    job_started(runtime, job)
    start_steps(runtime, job_id, index,
                Scope(doc_ids=[d.doc_id for d in documents],
                      hashes={d.doc_id: content_hash(d.title, d.text) for d in documents}))
