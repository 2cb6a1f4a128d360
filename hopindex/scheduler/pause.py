"""Pausing a job whose LLM budget ran out, and resuming it (docs/jobs.md).

A task whose next LLM call the budget refuses raises ``BudgetExhaustedError``; the
task base class then calls :func:`pause_job`, which moves a running job to ``paused``
once (however many tasks are refused at the same moment) and publishes
``job.paused`` with the reason and the figures. Every other task of the job that
starts while it is paused ends at once without doing its work
(``JobPausedError``): nothing calls the LLM until a resume.

Where the paused work waits depends on who runs the job:

- on workers, a paused task notes its id on the job (:func:`note_paused_task`) and
  ends without reporting, so its chord stays open; :func:`resume_paused_job` sends
  exactly those tasks again, with their own ids, and the chord completes as if they
  had never stopped (the same re-send the reaper does for a lost message,
  scheduler/redrive.py). Nothing done is redone: tasks that finished stay settled,
  and the calls a re-sent task made before are answered by the response cache.
- in the process that runs the job itself (no broker), the paused task waits in
  place (:func:`wait_for_resume`) and runs again once the job is resumed, from this
  process or another one sharing its state.

A paused job is not stalled: the reaper looks only at running and cancelling jobs.

The pause is the job's news, told by its ``job.paused`` event and shown by the CLI: it
is logged at info, for operators, not as a warning above that notice.
"""

from __future__ import annotations

import time
from typing import Any

from hopindex.backends.llm.budget import fits
from hopindex.backends.protocols import IndexInfo, StateStore
from hopindex.core.budget import INDEX_OPTION, BudgetCharge, BudgetLimits
from hopindex.core.errors import HopindexError, InvalidInputError, NotFoundError
from hopindex.core.events import EventType
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobState
from hopindex.scheduler.lifecycle import progress_data, publish
from hopindex.scheduler.redrive import Redrive, task_id, waiting_tasks
from hopindex.scheduler.runtime import Runtime

log = get_logger(__name__)


def pause_job(runtime: Runtime, job_id: str, reason: str,
              figures: dict[str, Any]) -> Job | None:
    """Pause the running job ``job_id`` because of its budget; publishes ``job.paused``
    once. None when the job is gone; a job not running (already paused, cancelling,
    final) is returned unchanged. What the job spent and holds is read again from its
    account (:func:`account_now`)."""
    figures, now = account_now(runtime, job_id, figures)
    reason = now or reason
    paused = False

    def change(job: Job) -> None:
        nonlocal paused
        # A job waiting on its provider batches pauses too: the budget refused the
        # lines of its next batch (scheduler/provider_batches.py).
        if job.state not in (JobState.RUNNING, JobState.WAITING_ON_PROVIDER):
            return
        job.state = JobState.PAUSED
        job.reason = reason
        job.pause = dict(figures)
        job.paused_at = job.updated_at = time.time()
        paused = True

    try:
        job = runtime.backends.state.update_job(job_id, change)
    except NotFoundError:
        return None
    if paused:
        log.info("job_paused", job_id=job_id, index=job.index, reason=reason)
        publish(runtime, EventType.JOB_PAUSED, job,
                {**progress_data(job), "reason": reason, "budget": dict(figures)})
    return job


def account_now(runtime: Runtime, job_id: str, figures: dict[str, Any]
                ) -> tuple[dict[str, Any], str | None]:
    """The refusal's ``figures`` with what the job spent and holds as its account has it
    now, and the reason they give (None: the refusal's stands).

    The refusal saw the account while other calls of its batch were in flight: they
    held their estimates and had spent nothing yet. The batch waits for every call
    before the task pauses the job, so by now they have ended, and the pause shows what
    they really spent. When they spent less than they held and the refused call would
    fit after all, the refusal's own reason stays: it is why the job paused. Without
    an account to read (no LLM in this process, the store failing) the figures stay.
    """
    llm = runtime.backends.llm
    limits = figures.get("limits")
    if llm is None or not isinstance(limits, dict):
        return figures, None
    try:
        status = llm.budget_status(job_id, BudgetLimits.from_dict(limits, where="limits"))
    except HopindexError as exc:
        log.warning("llm_budget_not_read", job_id=job_id, error=str(exc))
        return figures, None
    if status is None:
        return figures, None
    wanted = figures.get("next_call") or {}
    charge = BudgetCharge(max(int(wanted.get("tokens", 0)), 0),
                          max(float(wanted.get("cost", 0.0)), 0.0))
    fresh = {**figures, **status.as_dict()}
    if fits(status.limits, status.spent, status.held, charge):
        return fresh, None
    return fresh, status.refusal(charge)


def note_paused_task(runtime: Runtime, job_id: str, task_id: str) -> bool:
    """Note that task ``task_id`` ended without its work because the job is paused;
    False (nothing noted) when the job is no longer paused, so the task runs now."""
    noted = False

    def change(job: Job) -> None:
        nonlocal noted
        if job.state is not JobState.PAUSED:
            return
        if task_id not in job.paused_tasks:
            job.paused_tasks.append(task_id)
        noted = True

    try:
        runtime.backends.state.update_job(job_id, change)
    except NotFoundError:
        return False
    return noted


def wait_for_resume(runtime: Runtime, job_id: str, poll_s: float = 0.5) -> Job | None:
    """Block while the job is paused (the job runs in this process); the job as it is
    then, or None when it is gone."""
    logged = False
    while True:
        job = runtime.backends.state.get_job(job_id)
        if job is None or job.state is not JobState.PAUSED:
            return job
        if not logged:
            log.info("job_waiting_for_resume", job_id=job_id, index=job.index)
            logged = True
        time.sleep(poll_s)


def resume_job(runtime: Runtime, job_id: str, *, max_llm_tokens: int | None = None,
               max_cost: float | None = None) -> tuple[Job, list[str]]:
    """Move the paused job back to running, with the limits given replacing its own;
    returns it and the ids of the tasks that paused (taken off the record).

    Only the state changes here: :func:`resume_paused_job` also sends the paused tasks
    again. Raises ``InvalidInputError`` naming ``job_id`` for a job that is not paused.
    """
    taken: list[str] = []

    def change(job: Job) -> None:
        if job.state is not JobState.PAUSED:
            raise InvalidInputError(f"job {job_id} is {job.state.value}, not paused",
                                    where="job_id")
        job.budget = job.budget.with_overrides(max_llm_tokens=max_llm_tokens,
                                               max_cost=max_cost)
        job.state = JobState.RUNNING
        job.reason = ""
        job.pause = {}
        job.paused_at = None
        taken[:] = job.paused_tasks
        job.paused_tasks = []
        job.updated_at = time.time()

    job = runtime.backends.state.update_job(job_id, change)
    log.info("job_resumed", job_id=job_id, index=job.index, budget=job.budget.as_dict())
    publish(runtime, EventType.JOB_RESUMED, job,
            {**progress_data(job), "budget": job.budget.as_dict()})
    return job, taken


def resume_paused_job(runtime: Runtime, job_id: str, *, max_llm_tokens: int | None = None,
                      max_cost: float | None = None) -> Job:
    """Resume the paused job and, on workers, send its paused tasks again.

    Sent again are exactly the tasks that noted themselves paused: one still queued
    or running at the resume runs as it is, never twice. When they were lost after
    all (the process died between the two steps), the job is running and unsettled,
    which is what the reaper re-drives.
    """
    job, paused = resume_job(runtime, job_id, max_llm_tokens=max_llm_tokens,
                             max_cost=max_cost)
    if not paused or runtime.app is None or not runtime.settings.broker_url:
        return job
    dispatch = runtime.backends.state.last_dispatch(job_id)
    if dispatch is None:
        log.error("job_resume_without_dispatch", job_id=job_id, paused=len(paused))
        return job
    tasks = waiting_tasks(runtime.backends.state, job, dispatch, paused)
    if tasks:
        redrive = Redrive(runtime.app, dispatch, tasks)
    elif task_id(dispatch.callback) in paused:
        # Every task had finished: the callback is what paused; it gets their results.
        metas = [runtime.app.backend.get_task_meta(task_id(t)) for t in dispatch.tasks]
        redrive = Redrive(runtime.app, dispatch, [], [m.get("result") for m in metas])
    else:
        return job
    redrive.send()
    log.info("job_resume_sent", job_id=job_id, sent=redrive.describe())
    return job


def set_index_budget(state: StateStore, index: str, budget: BudgetLimits) -> IndexInfo:
    """Store ``budget`` as the default of ``index``'s later jobs (no limits: none)."""
    info = state.get_index(index)
    if info is None:
        raise NotFoundError(f"no index {index!r}")
    options = {k: v for k, v in info.options.items() if k != INDEX_OPTION}
    if budget.is_limited:
        options[INDEX_OPTION] = budget.as_dict()
    return state.set_index_options(index, options)


