"""What an index is missing: documents to redo from stage 1 and failed work items.

An index is ``ready`` when every document is fully indexed and no item is
outstanding, ``building`` while one of its jobs runs, and ``partial`` otherwise:
a job failed, was cancelled, or ended ``succeeded_with_errors``, or the build of a
levels phase built on request did not finish. The next ingest of the same input, or
a repair, completes a partial index.

A levels phase built on request that is merely stale (documents changed since its
build) leaves the index ``ready``: that is how such a phase is meant to be, and its
``levels`` entry says how stale (scheduler/level_builds.py).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hopindex.backends.protocols import StateStore
from hopindex.core.models import FailedItem
from hopindex.scheduler.level_builds import BuildState, LevelStatus

# Failed items listed by name in a description; the counts cover all of them.
MAX_LISTED = 20


class IndexStatus(enum.StrEnum):
    READY = "ready"
    BUILDING = "building"
    PARTIAL = "partial"


@dataclass(frozen=True, slots=True)
class Outstanding:
    status: IndexStatus
    # Documents stored but not fully indexed (no content hash yet): their stage 1
    # failed, or the job that took them ended before its finalize step.
    documents: list[str] = field(default_factory=list)
    failed: list[FailedItem] = field(default_factory=list)
    running_jobs: list[str] = field(default_factory=list)
    # The levels phases built on request, with how stale each is.
    levels: list[LevelStatus] = field(default_factory=list)

    @property
    def interrupted_levels(self) -> list[str]:
        return [s.phase for s in self.levels if s.state is BuildState.INTERRUPTED]

    @property
    def is_empty(self) -> bool:
        return not (self.documents or self.failed or self.interrupted_levels)

    def failed_per_phase(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in self.failed:
            counts[item.phase] = counts.get(item.phase, 0) + 1
        return counts

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status.value,
                "outstanding": {"documents": len(self.documents),
                                "failed": self.failed_per_phase(),
                                "items": [i.as_dict() for i in self.failed[:MAX_LISTED]]},
                "running_jobs": list(self.running_jobs),
                "levels": [s.as_dict() for s in self.levels]}


def outstanding_work(state: StateStore, index: str,
                     levels: Sequence[LevelStatus] = ()) -> Outstanding:
    """The index's unfinished documents and failed items, and its status; ``levels``:
    the build states of its on-request levels phases (``level_statuses``)."""
    hashes = state.document_hashes(index)
    documents = sorted(doc_id for doc_id, digest in hashes.items() if not digest)
    failed = state.list_failed_items(index)
    running = [j.job_id for j in state.list_jobs(index, limit=50) if not j.state.is_final]
    if running:
        status = IndexStatus.BUILDING
    elif documents or failed or any(s.state is BuildState.INTERRUPTED for s in levels):
        status = IndexStatus.PARTIAL
    else:
        status = IndexStatus.READY
    return Outstanding(status=status, documents=documents, failed=failed, running_jobs=running,
                       levels=list(levels))
