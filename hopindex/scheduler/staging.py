"""A queued job's input, kept in the state store until its turn on the index.

With workers a submission returns before its job's turn (scheduler/writers.py), so
its documents (or the ids it deletes) wait here for whichever process starts it:
one record per document, or one list of ids, keyed ``<job id>/<n>`` in a namespace
of the index's records that no method uses and no export copies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hopindex.backends.protocols import StateStore
from hopindex.core.models import Job

STAGING_NAMESPACE = "hopindex.queued"
_STAGE_CHUNK = 500


def stage_input(state: StateStore, job: Job, records: Sequence[dict[str, Any]]) -> int:
    """Keep a queued job's input until its turn; returns how many records."""
    for start in range(0, len(records), _STAGE_CHUNK):
        chunk = records[start:start + _STAGE_CHUNK]
        state.put_records(job.index, STAGING_NAMESPACE,
                          {f"{job.job_id}/{start + n}": r for n, r in enumerate(chunk)})
    return len(records)


def staged_input(state: StateStore, job: Job) -> list[dict[str, Any]]:
    """The input ``stage_input`` kept for ``job``, in its order."""
    records: list[dict[str, Any]] = []
    for start in range(0, max(job.staged, 0), _STAGE_CHUNK):
        keys = [f"{job.job_id}/{n}" for n in range(start, min(start + _STAGE_CHUNK, job.staged))]
        found = state.get_records(job.index, STAGING_NAMESPACE, keys)
        records += [found[k] for k in keys if k in found]
    return records


def drop_staged(state: StateStore, job: Job) -> None:
    if job.staged > 0:
        state.delete_records(job.index, [f"{job.job_id}/{n}" for n in range(job.staged)],
                             namespace=STAGING_NAMESPACE)
