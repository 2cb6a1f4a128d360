"""One writer at a time on an index: its jobs take turns in the order they were created.

Every job writes its index (an ingest, a delete, a repair, a rebuild), and two at
once would interleave: one job's finalize step could mark as indexed the text
another job stored after it. So a job whose index has an unfinished job created
before it (queued, running, cancelling, paused or waiting on the provider's batches)
waits, ``queued``, and stores nothing until its turn: its documents are written when
the turn comes, never when it is submitted.

The order is the state store's creation order (``StateStore.open_jobs``), which
needs no clock and no lock: a job created after another always sees it ahead.

Who starts a job at its turn depends on where it runs:

- With workers (a broker), the submission keeps the job's input in the state store
  (``stage_input``) and returns the job queued; whichever process ends the job
  ahead sends the index's ``start_queued`` task, and the reaper does the same for a
  line that stopped moving (scheduler/turns.py).
- Without one, the job runs in the process that submitted it: that process waits
  here for the turn (``WaitPolicy.WAIT``, woken by the index's events), or refuses
  at once (``WaitPolicy.NO_WAIT``, an ``IndexBusyError``, exit 75).
"""

from __future__ import annotations

import contextlib
import enum
import time
from collections.abc import Callable, Sequence
from typing import Any

from hopindex.backends.engine_lock import EnginesOwnedError, OwnerRole
from hopindex.backends.protocols import StateStore
from hopindex.core.errors import EventsGoneError, IndexBusyError
from hopindex.core.events import EventType
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobState
from hopindex.scheduler.lifecycle import progress_data, publish
from hopindex.scheduler.recovery import recover_orphaned_jobs
from hopindex.scheduler.runtime import Runtime
from hopindex.scheduler.staging import drop_staged, stage_input

log = get_logger(__name__)

# How long one wait for the index's events lasts before the line is read again; a
# job ahead that ends publishes an event, which wakes the wait at once.
WAKE_S = 2.0
# How often a waiting process looks for jobs ahead whose process died.
RECOVER_EVERY_S = 10.0
# How long a job whose turn came waits for the process that ran the job ahead to let
# go of the embedded engines (it is exiting).
ENGINE_RELEASE_S = 30.0


class WaitPolicy(enum.StrEnum):
    """What a submission does when its index is busy."""

    WAIT = "wait"  # wait in this process for the turn, then run the job here
    NO_WAIT = "no_wait"  # refuse at once (IndexBusyError); the job ends cancelled
    QUEUE = "queue"  # leave it queued with its input kept: workers start it at its turn


Announce = Callable[[Job], None]


def ahead_of(state: StateStore, job: Job) -> list[Job]:
    """The unfinished jobs of ``job``'s index created before it, oldest first."""
    line = state.open_jobs(job.index)
    ids = [j.job_id for j in line]
    return line[:ids.index(job.job_id)] if job.job_id in ids else []


def busy_reason(index: str, blocking: Job) -> str:
    """Why a job of ``index`` cannot start yet, naming the job it waits behind."""
    held = (f"index {index!r} is busy: job {blocking.job_id} ({blocking.kind.value}, "
            f"{blocking.state.value}) must end first")
    if blocking.state is JobState.PAUSED:
        held += (f"; it is paused on its LLM budget: resume it (`hopindex jobs resume "
                 f"{blocking.job_id}`) or cancel it (`hopindex jobs cancel {blocking.job_id}`)")
    elif blocking.state is JobState.WAITING_ON_PROVIDER:
        # It holds the index for as long as the provider takes (its completion window):
        # the next writer would otherwise write under the results it is waiting for.
        held += (f"; it is waiting on the provider's batches of its LLM requests and goes "
                 f"on by itself once their results are in, or cancel it (`hopindex jobs "
                 f"cancel {blocking.job_id}`)")
    return held


def refuse_when_busy(state: StateStore, index: str) -> None:
    """Refuse a submission that must not wait when ``index`` has an unfinished job."""
    line = state.open_jobs(index)
    if line:
        raise IndexBusyError(busy_reason(index, line[0]))


def note_place(runtime: Runtime, job_id: str, ahead: Sequence[Job]) -> Job | None:
    """Record on a queued job the job it waits for and its place in the line."""
    waits_for, position = ahead[-1].job_id, len(ahead)

    def change(job: Job) -> None:
        if job.state is JobState.QUEUED:
            job.waits_for, job.queue_position = waits_for, position
            job.updated_at = time.time()

    job = runtime.backends.state.get_job(job_id)
    if job is None or (job.waits_for, job.queue_position) == (waits_for, position):
        return job
    return runtime.backends.state.update_job(job_id, change)


def claim_turn(runtime: Runtime, job_id: str) -> Job | None:
    """Move a queued job to ``running`` (its turn); None when it is not queued any more
    (cancelled while it waited, or another process started it first)."""
    claimed = False

    def change(job: Job) -> None:
        nonlocal claimed
        if job.state is not JobState.QUEUED:
            return
        job.state = JobState.RUNNING
        job.started_at = job.updated_at = time.time()
        job.waits_for, job.queue_position = "", 0
        claimed = True

    job = runtime.backends.state.update_job(job_id, change)
    return job if claimed else None


def wait_turn(runtime: Runtime, job: Job, policy: WaitPolicy,
              announce: Announce | None = None) -> Job | None:
    """Wait until no job of the index is ahead of ``job`` and claim its turn.

    Returns the job, now running; None when it is left queued (``QUEUE``, a job
    ahead) or stopped while it waited (cancelled). ``NO_WAIT`` with a job ahead ends
    the job cancelled and raises ``IndexBusyError``. ``announce`` is told each new
    job this one waits behind.
    """
    state = runtime.backends.state
    told = ""
    recovered_at = time.monotonic()
    while True:
        # Read before the line: an event that comes after it wakes the wait below.
        after = runtime.backends.events.last_event_id()
        ahead = ahead_of(state, job)
        if not ahead:
            return claim_turn(runtime, job.job_id)
        blocking = ahead[0]
        if policy is WaitPolicy.NO_WAIT:
            reason = busy_reason(job.index, blocking)
            _end_unstarted(runtime, job.job_id, f"not started: {reason}")
            raise IndexBusyError(reason)
        current = note_place(runtime, job.job_id, ahead)
        if current is None or current.state is not JobState.QUEUED:
            return None
        if policy is WaitPolicy.QUEUE:
            return None
        if blocking.job_id != told:
            told = blocking.job_id
            log.info("job_waiting", job_id=job.job_id, index=job.index,
                     behind=blocking.job_id, behind_state=blocking.state.value)
            if announce is not None:
                announce(blocking)
        # Woken by any event of the index: the job ahead ending publishes one. More
        # events than the log keeps since ``after`` (EventsGoneError) wake it too.
        with contextlib.suppress(EventsGoneError):
            runtime.backends.events.wait_events(after, job.index, timeout_s=WAKE_S, limit=1)
        if time.monotonic() - recovered_at >= RECOVER_EVERY_S:
            # A job ahead whose process died would hold the line for ever.
            recover_orphaned_jobs(runtime)
            recovered_at = time.monotonic()


def policy_of(runtime: Runtime, wait: WaitPolicy) -> WaitPolicy:
    """With workers a job never waits in the submitting process: it is queued."""
    return WaitPolicy.QUEUE if runtime.settings.broker_url else wait


def enter_line(runtime: Runtime, job: Job, wait: WaitPolicy, announce: Announce | None,
               staged: Callable[[], list[dict[str, Any]]] = list) -> Job | None:
    """Create ``job`` (queued) and wait for its turn as ``wait`` says: the job, now
    running, when its turn has come (the caller then starts its work), else None: left
    queued with its input ``staged`` for whoever starts it, or stopped while it waited.
    """
    state = runtime.backends.state
    policy = policy_of(runtime, wait)
    if policy is WaitPolicy.NO_WAIT:
        refuse_when_busy(state, job.index)
    state.create_job(job)
    started = wait_turn(runtime, job, policy, announce)
    if started is None and policy is WaitPolicy.QUEUE:
        kept = _keep_input(runtime, job, staged())
        # The job ahead may have ended while the input was written, and found this
        # one without it: look again. Whoever claims the turn first starts it.
        if kept is not None and not ahead_of(state, kept):
            started = claim_turn(runtime, job.job_id)
            if started is not None:
                drop_staged(state, started)
    if started is not None:
        claim_engines(runtime)
    return started


def _keep_input(runtime: Runtime, job: Job, records: Sequence[dict[str, Any]]) -> Job | None:
    kept = stage_input(runtime.backends.state, job, records)

    def change(record: Job) -> None:
        record.staged = kept

    current = runtime.backends.state.update_job(job.job_id, change)
    if current.state is JobState.QUEUED:
        return current
    # Cancelled while its input was written: its end found nothing kept to drop.
    drop_staged(runtime.backends.state, current)
    return None


def _end_unstarted(runtime: Runtime, job_id: str, reason: str) -> None:
    ended = False

    def change(job: Job) -> None:
        nonlocal ended
        if job.state is JobState.QUEUED:
            job.state = JobState.CANCELLED
            job.reason = reason
            job.finished_at = job.updated_at = time.time()
            ended = True

    job = runtime.backends.state.update_job(job_id, change)
    if ended:
        publish(runtime, EventType.JOB_CANCELLED, job, progress_data(job))


def claim_engines(runtime: Runtime) -> None:
    """Open the embedded engines before a job at its turn writes anything.

    Without a broker the job ahead ran in another process, which may still hold the
    engines while it exits: wait for it a little. A process that keeps them (a
    server, a worker) is an error now, before a document is stored.
    """
    if runtime.settings.broker_url:
        return
    deadline = time.monotonic() + ENGINE_RELEASE_S
    while True:
        try:
            runtime.backends.keywords  # noqa: B018  # opening claims the engine's folder
            runtime.backends.vectors  # noqa: B018
            return
        except EnginesOwnedError as exc:
            owner = exc.owner
            if (owner is None or owner.role == OwnerRole.ENGINE_OWNER.value
                    or time.monotonic() >= deadline):
                raise
            time.sleep(0.2)  # most likely the process of the job ahead, exiting
