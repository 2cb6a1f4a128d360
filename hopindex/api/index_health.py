"""The warning a query carries when its index is not fully built.

A query on a ``partial`` index (documents not fully indexed, items that failed for
good, a levels build cut short) or a ``building`` one (a job is changing it) still
answers, from what is there; its result says so, naming the status, what is
outstanding and what completes it (scheduler/outstanding.py has the statuses).

Working the status out reads every document's mark, which a query of a large index
must not pay each time. Outside a running job only a new job changes it (jobs write
the marks, the failed items and the levels' records), so a status without a running
job is kept until the index's newest job is another one or in another state; a
``building`` status is never kept, since its job may end at any moment.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from hopindex.backends.protocols import JobStore
from hopindex.methods.base import QueryWarning
from hopindex.scheduler.outstanding import IndexStatus, Outstanding

PARTIAL = "index_partial"
BUILDING = "index_building"
# Running jobs named in a warning; the rest are counted.
MAX_JOBS_NAMED = 3


def status_warnings(index: str, outstanding: Outstanding) -> list[QueryWarning]:
    """The warning for ``index`` in this state: none when it is ready."""
    if outstanding.status is IndexStatus.BUILDING:
        jobs = outstanding.running_jobs
        named = ", ".join(jobs[:MAX_JOBS_NAMED])
        more = f" and {len(jobs) - MAX_JOBS_NAMED} more" if len(jobs) > MAX_JOBS_NAMED else ""
        follow = f"`hopindex jobs {jobs[0]} --follow`" if jobs else "`hopindex jobs`"
        return [QueryWarning(BUILDING, f"index {index!r} is building (job {named}{more} "
                             "running): the answer may miss documents it has not finished "
                             f"indexing; wait for the job ({follow}) and ask again")]
    if outstanding.status is IndexStatus.PARTIAL:
        return [QueryWarning(PARTIAL, f"index {index!r} is partial ({_missing(outstanding)}):"
                             " the answer may miss what is not indexed; run `hopindex "
                             f"repair --index {index}` (POST /v1/indexes/{index}/repair) "
                             "to complete it")]
    return []


def _missing(outstanding: Outstanding) -> str:
    parts = []
    if outstanding.documents:
        n = len(outstanding.documents)
        parts.append(f"{n} document{'s' if n != 1 else ''} not fully indexed")
    if outstanding.failed:
        n = len(outstanding.failed)
        parts.append(f"{n} failed item{'s' if n != 1 else ''}")
    if levels := outstanding.interrupted_levels:
        parts.append(f"unfinished build of {', '.join(levels)}")
    return "; ".join(parts) or "outstanding work"


class IndexHealth:
    """Each index's warnings, worked out again only when its jobs changed (module
    docstring); safe to share between the threads of a server."""

    def __init__(self, jobs: Callable[[], JobStore],
                 outstanding: Callable[[str], Outstanding]) -> None:
        self._jobs = jobs  # called at each query: the store opens at the first one
        self._outstanding = outstanding
        self._kept: dict[str, tuple[object, list[QueryWarning]]] = {}
        self._lock = threading.Lock()

    def warnings(self, index: str) -> list[QueryWarning]:
        key = tuple((job.job_id, job.state.value) for job in self._jobs().list_jobs(index, 1))
        with self._lock:
            kept = self._kept.get(index)
        if kept is not None and kept[0] == key:
            return list(kept[1])
        outstanding = self._outstanding(index)
        warnings = status_warnings(index, outstanding)
        with self._lock:
            if outstanding.status is IndexStatus.BUILDING:
                self._kept.pop(index, None)
            else:
                self._kept[index] = (key, warnings)
        return list(warnings)
