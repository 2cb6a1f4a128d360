"""A job's provider batches: sent by its tasks, followed by the poller (docs/jobs.md).

In batch mode a phase task's LLM calls are answered from stored batch results
(backends/llm/batch_calls.py); those it could not answer end its run with
``BatchPendingError``. Then, in this order:

1. :func:`send_batch` records the lines on the job under a fresh token, before the
   provider hears of them, and moves the job to ``waiting_on_provider``. Lines already
   in a batch on its way are not sent again: the task is added to that batch's waiters.
2. The batch is created, carrying the token in its metadata, and its id recorded. A
   process killed between the two leaves a record without an id, which the poller
   looks up by its token: found, it is followed; not found (never created), the
   record is dropped and its tasks sent again, which ask for the lines anew.
3. The task ends without reporting, its chord open (as a paused task does).
4. :func:`poll_job_batches` (a periodic task on workers; in place, in the process that
   runs a job without workers) follows each batch. When one ends, its lines' results
   are stored, its usage is put on the job at the batch price, and its tasks are sent
   again with their own ids: they find their results and go on, or send their next
   lines (a repair, a larger budget, the next step of the phase) as the next batch.

Every step is idempotent: results stored twice are the same results, a batch's usage
is counted with its ``settled`` mark in one update, and a task sent twice settles once.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Sequence
from typing import Any

from hopindex.backends.llm.batch_calls import batch_prices
from hopindex.backends.llm.batch_scope import PendingLine
from hopindex.backends.llm.usage import LlmPrices
from hopindex.core.budget import BudgetCharge
from hopindex.core.errors import BudgetExhaustedError, HopindexError, NotFoundError
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobState, LlmUsage
from hopindex.core.provider_batches import TOKEN_KEY, BatchState, BatchYield, ProviderBatch
from hopindex.scheduler.redrive import Redrive, waiting_tasks
from hopindex.scheduler.runtime import Runtime

log = get_logger(__name__)

# How long a record may stay without its batch's id before the poller asks the
# provider for it by its token: longer than creating a batch ever takes.
UNNAMED_GRACE_S = 120.0


def send_batch(runtime: Runtime, job_id: str, phase: str, task_id: str,
               lines: Sequence[PendingLine]) -> ProviderBatch | None:
    """Record and send ``lines`` for the task ``task_id``; the batch sent, or None when
    every line was on its way already (the task then waits for those batches)."""
    token = uuid.uuid4().hex
    llm = runtime.backends.llm
    assert llm is not None  # only an LLM's calls are deferred
    state = runtime.backends.state
    job = state.get_job(job_id)
    if job is None:
        return None
    on_way = {key for batch in job.provider_batches if batch.outstanding for key in batch.keys}
    fresh = [line for line in lines if line.key not in on_way]
    held, refused = _hold(runtime, job, fresh)
    fresh = fresh[:len(held)]

    stopping = False

    def record(job: Job) -> None:
        nonlocal stopping
        if job.state.is_stopping:
            # Cancelled (or failed) since the read above: a batch sent now would run,
            # and be billed, for a job whose cancel has already settled its batches.
            stopping = True
            return
        outstanding = {key: batch for batch in job.provider_batches if batch.outstanding
                       for key in batch.keys}
        for line in lines:
            batch = outstanding.get(line.key)
            if batch is not None and task_id not in batch.tasks:
                batch.tasks.append(task_id)
        if fresh:
            job.provider_batches.append(ProviderBatch(
                token=token, phase=phase, keys=[line.key for line in fresh], tasks=[task_id],
                total=len(fresh), held_tokens=sum(c.tokens for c in held),
                held_cost=sum(c.cost for c in held)))
        if job.state is JobState.RUNNING and (fresh or outstanding):
            job.state = JobState.WAITING_ON_PROVIDER
        job.updated_at = time.time()

    state.update_job(job_id, record)
    if stopping:
        log.info("llm_batch_not_sent_job_stopping", job_id=job_id, phase=phase,
                 lines=len(lines))
        return None
    if not fresh:
        if refused is not None:
            raise refused
        log.info("llm_batch_lines_on_their_way", job_id=job_id, phase=phase,
                 lines=len(lines))
        return None
    try:
        batch_id = llm.submit_batch(fresh, metadata={"hopindex_job": job_id,
                                                     TOKEN_KEY: token})
    except HopindexError as exc:
        _drop(runtime, job_id, token, f"not sent: {exc}")
        if held:
            llm.settle_batch_budget(job_id, BudgetCharge(sum(c.tokens for c in held),
                                                         sum(c.cost for c in held)),
                                    BudgetCharge(0))
        raise
    job, cancelled = _name_batch(runtime, job_id, token, batch_id)
    if cancelled:
        # The job was cancelled while the provider created the batch: the cancel settled
        # a record without an id and asked the provider nothing, so ask now, or the
        # batch runs (and is billed) for a job that has stopped.
        _cancel_created(runtime, job_id, batch_id)
    log.info("llm_batch_sent", job_id=job_id, phase=phase, batch_id=batch_id,
             lines=len(fresh))
    if refused is not None:
        # The part the budget covers is on its way; the job pauses with the rest, which
        # the task asks for again once it is resumed.
        raise refused
    return _find(job, token) if job is not None else None


def _hold(runtime: Runtime, job: Job, lines: Sequence[PendingLine]
          ) -> tuple[list[BudgetCharge], BudgetExhaustedError | None]:
    """Hold the lines' estimates on the job's budget at the batch price, in order, up to
    the first that does not fit; the holds, and the refusal for the rest (None: all fit)."""
    prices = _batch_prices(runtime)
    charges = [BudgetCharge(line.prompt_tokens + line.completion_tokens,
                            prices.cost_of(line.prompt_tokens, line.completion_tokens) or 0.0)
               for line in lines]
    if not job.budget.is_limited or not charges:
        return charges, None
    llm = runtime.backends.llm
    assert llm is not None
    fitting = llm.hold_batch_budget(job.job_id, job.budget, charges)
    if fitting == len(charges):
        return charges, None
    status = llm.budget_status(job.job_id, job.budget)
    wanted = charges[fitting]
    reason = (status.refusal(wanted) if status is not None
              else "the LLM budget cannot hold the batch")
    figures: dict[str, Any] = {**(status.as_dict() if status is not None else {}),
                               "stage": lines[fitting].stage,
                               "next_call": {"tokens": wanted.tokens, "cost": wanted.cost}}
    log.info("llm_batch_budget_refused", job_id=job.job_id, lines=len(charges),
             held=fitting, reason=reason)
    return charges[:fitting], BudgetExhaustedError(reason, job_id=job.job_id, figures=figures)


def _batch_prices(runtime: Runtime) -> LlmPrices:
    settings = runtime.settings
    return batch_prices(LlmPrices(settings.llm_price_input_per_mtok,
                                  settings.llm_price_output_per_mtok),
                        settings.llm_batch_discount)


def waiting_jobs(runtime: Runtime, limit: int = 1000) -> list[Job]:
    return [job for job in runtime.backends.state.list_jobs(limit=limit)
            if any(batch.outstanding for batch in job.provider_batches)]


def poll_provider_batches(runtime: Runtime) -> int:
    """One look at every waiting job's batches (the periodic task); how many ended."""
    ended = 0
    for job in waiting_jobs(runtime):
        try:
            ended += poll_job_batches(runtime, job.job_id)
        except HopindexError as exc:  # one provider or job failing: the rest are polled
            log.warning("llm_batch_poll_failed", job_id=job.job_id, error=str(exc))
    return ended


def poll_job_batches(runtime: Runtime, job_id: str) -> int:
    """Follow the job's outstanding batches once; how many ended (and were settled)."""
    job = runtime.backends.state.get_job(job_id)
    if job is None:
        return 0
    llm = runtime.backends.llm
    assert llm is not None
    ended = 0
    for batch in [b for b in job.provider_batches if b.outstanding]:
        if not batch.batch_id:
            if time.time() - batch.submitted_at < UNNAMED_GRACE_S:
                continue
            found = llm.find_batch(batch.token)
            if found is None:
                log.warning("llm_batch_never_sent", job_id=job_id, token=batch.token)
                _drop(runtime, job_id, batch.token, "never sent: its sender stopped first",
                      resend=True)
                continue
            _update_batch(runtime, job_id, batch.token, batch_id=found)
            batch.batch_id = found
        progress = llm.batch_progress(batch.batch_id)
        _update_batch(runtime, job_id, batch.token, state=progress.state,
                      total=progress.total, completed=progress.completed,
                      failed=progress.failed, error=progress.error)
        if progress.state.ended:
            settle_batch(runtime, job_id, batch.token)
            ended += 1
    return ended


def settle_batch(runtime: Runtime, job_id: str, token: str) -> None:
    """Store an ended batch's results, count its usage, and send its tasks again."""
    job = runtime.backends.state.get_job(job_id)
    batch = _find(job, token) if job is not None else None
    if job is None or batch is None or batch.settled:
        return
    llm = runtime.backends.llm
    assert llm is not None
    # How many batches each line has been in: the record's, whoever stores it, however
    # often (a line past llm_batch_max_rounds fails its item).
    sent = [set(b.keys) for b in job.provider_batches]
    rounds = {key: sum(1 for keys in sent if key in keys) for key in batch.keys}
    got = (llm.store_batch_results(batch.batch_id, batch.keys, batch.phase, rounds)
           if batch.state.has_results or batch.state is BatchState.FAILED else BatchYield())
    prices = _batch_prices(runtime)
    usage = LlmUsage(calls=got.answered, prompt_tokens=got.prompt_tokens,
                     completion_tokens=got.completion_tokens,
                     cost=prices.cost_of(got.prompt_tokens, got.completion_tokens))
    settled_now = False

    def settle(job: Job) -> None:
        nonlocal settled_now
        found = _find(job, token)
        if found is None or found.settled:
            return
        found.settled, found.ended_at = True, time.time()
        if got.answered:
            job.add_llm_usage({found.phase: usage})
        _leave_waiting(job)
        settled_now = True

    job = runtime.backends.state.update_job(job_id, settle)
    if not settled_now:
        return
    if batch.held_tokens or batch.held_cost:
        llm.settle_batch_budget(job_id, BudgetCharge(batch.held_tokens, batch.held_cost),
                                BudgetCharge(got.prompt_tokens + got.completion_tokens,
                                             usage.cost or 0.0))
    log.info("llm_batch_settled", job_id=job_id, batch_id=batch.batch_id,
             state=batch.state.value, answered=got.answered, failed=got.failed)
    send_tasks_again(runtime, job, batch.tasks)


def send_tasks_again(runtime: Runtime, job: Job, task_ids: Sequence[str]) -> None:
    """Send the waiting tasks again, with their own ids, on workers (a process that runs
    its job itself runs them again in place)."""
    if runtime.app is None or not runtime.settings.broker_url or job.state.is_final:
        return
    dispatch = runtime.backends.state.last_dispatch(job.job_id)
    if dispatch is None:
        log.error("llm_batch_without_dispatch", job_id=job.job_id, tasks=len(task_ids))
        return
    tasks = waiting_tasks(runtime.backends.state, job, dispatch, task_ids)
    if tasks:
        Redrive(runtime.app, dispatch, tasks).send()


def wait_for_batches(runtime: Runtime, job_id: str) -> Job | None:
    """Follow the job's batches until none is outstanding (a job run in this process);
    the job as it is then. A cancelled job's batches are cancelled."""
    interval_s = runtime.settings.llm_batch_poll_interval_s
    while True:
        job = runtime.backends.state.get_job(job_id)
        if job is None:
            return None
        if job.state in (JobState.CANCELLING, JobState.CANCELLED):
            cancel_provider_batches(runtime, job)
            return job
        if not any(batch.outstanding for batch in job.provider_batches):
            return job
        poll_job_batches(runtime, job_id)
        job = runtime.backends.state.get_job(job_id)
        if job is not None and any(b.outstanding for b in job.provider_batches):
            time.sleep(interval_s)


def cancel_provider_batches(runtime: Runtime, job: Job) -> int:
    """Ask the provider to cancel the job's outstanding batches; how many were asked.
    Their records are settled with nothing read: the job is stopping."""
    # Settled first, in one update, and the provider asked about exactly the ids that
    # update saw: ``job`` may be older than a batch a task named meanwhile. A record
    # still without an id is settled here, and its sender, naming it, cancels it.
    to_cancel: list[str] = []

    def settle_all(job: Job) -> None:
        to_cancel.clear()
        for batch in job.provider_batches:
            if batch.outstanding:
                batch.settled, batch.ended_at = True, time.time()
                batch.state = (BatchState.CANCELLING if batch.batch_id
                               else BatchState.CANCELLED)
                if batch.batch_id:
                    to_cancel.append(batch.batch_id)

    with contextlib.suppress(NotFoundError):
        runtime.backends.state.update_job(job.job_id, settle_all)
    llm = runtime.backends.llm
    asked = 0
    for batch_id in to_cancel:
        if llm is None:
            break
        try:
            llm.cancel_batch(batch_id)
            asked += 1
        except HopindexError as exc:
            log.warning("llm_batch_not_cancelled", job_id=job.job_id, batch_id=batch_id,
                        error=str(exc))
    return asked


def _leave_waiting(job: Job) -> None:
    if job.state is JobState.WAITING_ON_PROVIDER and not any(
            b.outstanding for b in job.provider_batches):
        job.state = JobState.RUNNING
    job.updated_at = time.time()


def _drop(runtime: Runtime, job_id: str, token: str, reason: str, *,
          resend: bool = False) -> None:
    """Settle a record whose batch the provider never got: its lines are free again."""
    dropped: list[str] = []

    def change(job: Job) -> None:
        batch = _find(job, token)
        if batch is None or batch.settled:
            return
        batch.settled, batch.ended_at, batch.error = True, time.time(), reason
        batch.state = BatchState.FAILED
        dropped[:] = batch.tasks
        _leave_waiting(job)

    try:
        job = runtime.backends.state.update_job(job_id, change)
    except NotFoundError:
        return
    if resend and dropped:
        send_tasks_again(runtime, job, dropped)


def _update_batch(runtime: Runtime, job_id: str, token: str, **values: Any) -> Job | None:
    def change(job: Job) -> None:
        batch = _find(job, token)
        if batch is None:
            return
        for name, value in values.items():
            setattr(batch, name, value)

    try:
        return runtime.backends.state.update_job(job_id, change)
    except NotFoundError:
        return None


def _name_batch(runtime: Runtime, job_id: str, token: str, batch_id: str
                ) -> tuple[Job | None, bool]:
    """Write the id the provider gave the batch recorded under ``token``; True when the
    record was settled meanwhile (the job cancelled while the batch was being created)."""
    cancelled = False

    def change(job: Job) -> None:
        nonlocal cancelled
        batch = _find(job, token)
        if batch is None:
            return
        batch.batch_id = batch_id
        cancelled = batch.settled
        batch.state = BatchState.CANCELLING if cancelled else BatchState.VALIDATING

    try:
        return runtime.backends.state.update_job(job_id, change), cancelled
    except NotFoundError:
        return None, False


def _cancel_created(runtime: Runtime, job_id: str, batch_id: str) -> None:
    llm = runtime.backends.llm
    if llm is None:
        return
    try:
        llm.cancel_batch(batch_id)
    except HopindexError as exc:
        log.warning("llm_batch_not_cancelled", job_id=job_id, batch_id=batch_id,
                    error=str(exc))
        return
    log.info("llm_batch_cancelled_on_creation", job_id=job_id, batch_id=batch_id)


def _find(job: Job, token: str) -> ProviderBatch | None:
    return next((b for b in job.provider_batches if b.token == token), None)

