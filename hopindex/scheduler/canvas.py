"""Fan-outs over Celery chords, recorded so that a stalled job can be re-driven.

A phase runs its tasks as a chord: the callback that plans the next phase fires
when every task has returned. A message the broker loses would hang that chord
forever: kombu's Redis transport pops a message and records it as unacknowledged
a few milliseconds later, so a worker killed inside that gap takes the message
with it. Each fan-out is therefore frozen before anything is sent, giving every
task and the callback its id, and recorded on the job (``JobStore.add_dispatch``);
the reaper re-sends from that record what never reported (scheduler/redrive.py).
"""

from __future__ import annotations

import json
from typing import Any

from celery import chord
from celery.canvas import Signature

from hopindex.core.logging import get_logger
from hopindex.core.models import Dispatch, Job
from hopindex.scheduler.job_traces import trace_step
from hopindex.scheduler.progress import settle
from hopindex.scheduler.runtime import Runtime

log = get_logger(__name__)


def fan_out(runtime: Runtime, job_id: str, phase: str, header: list[Signature],
            callback: Signature) -> None:
    """Run ``header`` in parallel, then ``callback`` with their results.

    An empty chord header is legal in Celery but runs its body with no arguments
    in some result backends; the callback is sent directly with ``[]`` instead.
    The record is written before the first message goes out: a submitter that dies
    in between leaves a fan-out the reaper sends whole, never one it cannot see.
    """
    # An eager run executes every task inside this call: nothing can be lost, and no
    # reaper runs without a broker, so nothing is recorded or even built. Each frozen
    # task carries the chord's body, and the body the job's scope: the 2Wiki ingest's
    # bridge phase built ~1 GB of records this way only to drop them.
    recorded = bool(runtime.settings.broker_url)
    if recorded and not _first_fan_out(runtime, job_id, phase):
        log.info("fan_out_repeated", job_id=job_id, phase=phase)
        return
    trace_step(runtime, job_id, phase, header, callback)
    if not header:
        body = callback.clone()
        body.freeze()
        if recorded:
            runtime.backends.state.add_dispatch(
                job_id, Dispatch(phase=phase, tasks=[], callback=_plain(body)))
        body.clone(args=([],)).apply_async()
        return
    canvas = chord(header, callback)
    canvas.freeze()
    if recorded:
        group_id = canvas.tasks.id
        tasks = []
        for task in canvas.tasks.tasks:
            record = _plain(task)
            # The frozen header names its group only in the message Celery builds; a
            # re-sent task needs it to count towards the same chord.
            record["options"]["group_id"] = group_id
            tasks.append(record)
        runtime.backends.state.add_dispatch(
            job_id, Dispatch(phase=phase, tasks=tasks, callback=_plain(canvas.body)))
    canvas.apply_async()


def _plain(signature: Signature) -> dict[str, Any]:
    """The signature as the JSON a task message carries (chord bodies included)."""
    plain: dict[str, Any] = json.loads(json.dumps(signature))
    return plain


def _first_fan_out(runtime: Runtime, job_id: str, phase: str) -> bool:
    """False when ``phase`` of the job was fanned out already: the message that plans a
    step came twice (the broker hands a message out again when its first run outlasts
    the visibility timeout, as a tree level's first UMAP compile can on a loaded
    machine) and the first run has sent its tasks. Sending them again under new ids
    would run every batch twice and count its items twice.

    The mark is one atomic job update; its fan-out record follows at once. A run that
    finds the mark but no record of the phase goes on: the first run died between the
    two, and nothing of the phase was sent."""
    state = runtime.backends.state

    def mark(job: Job) -> None:  # the settle key is the whole change
        return None

    _, first = settle(state, job_id, mark, key=f"fan-out:{phase}")
    if first:
        return True
    last = state.last_dispatch(job_id)
    return last is None or last.phase != phase
