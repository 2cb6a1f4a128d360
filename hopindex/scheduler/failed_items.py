"""Keep an index's failed work items current as tasks finish (``FailedItemStore``).

A work item that fails for good is recorded on its index, not only on the job, so
it is not lost when the job ends: the next ingest (stage 2 re-plans every failed
entity; a failed document keeps no content hash, so it counts as changed) or a
repair of the index redoes exactly those items. An item that a later task
completes is cleared.
"""

from __future__ import annotations

from collections.abc import Sequence

from hopindex.backends.protocols import FailedItemStore
from hopindex.core.models import FailedItem, ItemError, Job

# Units a job replaced (stale group units, passages of changed text) but ended before its
# embed phase purged: outstanding like failed items, purged by the next job's embed phase.
PURGE_PHASE = "purge"


def level_phase(phase: str, level: int) -> str:
    """The name failed items of one level of a levels phase are kept under."""
    return f"{phase}@{level}"


def settle_items(store: FailedItemStore, index: str, job_id: str, phase: str, *,
                 errors: Sequence[ItemError], completed: Sequence[str]) -> None:
    """Record ``errors`` as failed items of ``phase`` and clear the ``completed`` ones.

    Idempotent, so a redelivered task repeats it harmlessly.
    """
    failed = [FailedItem(phase=phase, item=e.item, reason=e.reason, job_id=job_id)
              for e in errors]
    failed_ids = {f.item for f in failed}
    store.clear_failed_items(index, phase, [i for i in completed if i not in failed_ids])
    store.put_failed_items(index, failed)


def failed_item_ids(store: FailedItemStore, index: str, phase: str) -> list[str]:
    """The items of ``phase`` outstanding on ``index``."""
    return [f.item for f in store.list_failed_items(index, phase)]


def keep_stale_units(store: FailedItemStore, job: Job) -> None:
    """Hand an unfinished job's replaced units to the index, so a later job purges them."""
    store.put_failed_items(job.index, [
        FailedItem(phase=PURGE_PHASE, item=unit_id, job_id=job.job_id,
                   reason=f"replaced by job {job.job_id}, which ended ({job.state.value}) "
                          "before purging it")
        for unit_id in job.stale_units])
