"""When a levels phase built only on request (``Rebuild.ON_REQUEST``) is built, and how
stale it is.

A global structure (a tree over every passage) costs a whole build whatever changed, so
its phase is not run by every job. The runtime keeps one record per such phase and
index, in the state store's records under ``runtime.levels`` (key: the qualified phase
name): when it was last built and by which job, the documents the index held then, the
documents added, changed or deleted since, and the job building it now.

A job reaching the phase at level 0 builds it when it was never built, when the last
build did not finish (its job ended first), when the job names it in
``Scope.rebuild`` (a rebuild job), or when the share of documents changed since the
last build, this job's included, reaches the method's ``rebuild_share``. Otherwise the
job adds its documents to the changed ones and skips the phase, unless some of the
phase's items failed in an earlier job: then it builds exactly those again (see
:func:`decide_build`). Every step is idempotent under a re-delivered message.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hopindex.backends.protocols import StateStore
from hopindex.core.errors import ConfigError
from hopindex.core.logging import get_logger
from hopindex.methods.plugin import IndexMethod, LevelsPhase, Rebuild, Scope, phase_name
from hopindex.scheduler.runtime import Runtime

log = get_logger(__name__)

# Owned by the runtime, not by a method: a method's namespaces start with its name.
NAMESPACE = "runtime.levels"


class BuildMode(enum.StrEnum):
    """What a job does with an on-request levels phase."""

    BUILD = "build"  # plans every level, the changed documents folded in
    FINISH = "finish"  # builds exactly the failed items again, no planning
    SKIP = "skip"  # leaves it as it is, one job's documents staler


class BuildState(enum.StrEnum):
    NEVER_BUILT = "never_built"
    CURRENT = "current"  # built, no document changed since
    STALE = "stale"  # built, documents changed since
    BUILDING = "building"  # a running job is building it
    INTERRUPTED = "interrupted"  # the job building it ended first: the next job builds it


@dataclass(slots=True)
class LevelBuild:
    """The record of one on-request levels phase on one index."""

    phase: str
    built_at: float | None = None
    job_id: str = ""  # the job that last finished a build
    documents: int = 0  # documents in the index when that build started
    changed: list[str] = field(default_factory=list)  # added or changed since
    deleted: list[str] = field(default_factory=list)  # deleted since
    building: str = ""  # the job building it now, or whose build did not finish
    # What the build under way folds in: only those are clean once it finishes, so
    # documents another job changes meanwhile stay changed.
    covers_changed: list[str] = field(default_factory=list)
    covers_deleted: list[str] = field(default_factory=list)

    @property
    def since(self) -> set[str]:
        return set(self.changed) | set(self.deleted)

    def note_changes(self, changed: Iterable[str], deleted: Iterable[str]) -> bool:
        """Add documents changed and deleted since the build; False when nothing is new.
        A document deleted after a change counts as deleted, and the other way round."""
        new_changed, new_deleted = set(changed), set(deleted)
        changed_now = (set(self.changed) - new_deleted) | new_changed
        deleted_now = (set(self.deleted) - new_changed) | new_deleted
        if changed_now == set(self.changed) and deleted_now == set(self.deleted):
            return False
        self.changed, self.deleted = sorted(changed_now), sorted(deleted_now)
        return True

    def as_record(self) -> dict[str, Any]:
        return {"built_at": self.built_at, "job_id": self.job_id, "documents": self.documents,
                "changed": list(self.changed), "deleted": list(self.deleted),
                "building": self.building, "covers_changed": list(self.covers_changed),
                "covers_deleted": list(self.covers_deleted)}

    @classmethod
    def from_record(cls, phase: str, record: dict[str, Any] | None) -> LevelBuild:
        if record is None:
            return cls(phase=phase)
        built_at = record.get("built_at")
        return cls(phase=phase, built_at=float(built_at) if built_at is not None else None,
                   job_id=str(record.get("job_id", "")),
                   documents=int(record.get("documents", 0)),
                   changed=[str(d) for d in record.get("changed", [])],
                   deleted=[str(d) for d in record.get("deleted", [])],
                   building=str(record.get("building", "")),
                   covers_changed=[str(d) for d in record.get("covers_changed", [])],
                   covers_deleted=[str(d) for d in record.get("covers_deleted", [])])


@dataclass(frozen=True, slots=True)
class LevelStatus:
    """An on-request levels phase as the index record shows it."""

    phase: str
    state: BuildState
    built_at: float | None
    built_by: str
    documents_at_build: int
    changed_since: int  # documents added, changed or deleted since the last build
    changed_share: float  # of the documents in the index now
    rebuild_share: float  # the share that rebuilds it automatically (0: never)
    building_job: str

    @property
    def stale(self) -> bool:
        """Whether it may not reflect the index's documents as they are now."""
        return self.state is not BuildState.CURRENT

    def as_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "state": self.state.value, "stale": self.stale,
                "built_at": self.built_at, "built_by": self.built_by or None,
                "documents_at_build": self.documents_at_build,
                "changed_since_build": self.changed_since,
                "changed_share": round(self.changed_share, 4),
                "rebuild_share": self.rebuild_share,
                "building_job": self.building_job or None}


def on_request_phases(method: IndexMethod) -> list[LevelsPhase]:
    return [p for p in method.phases
            if isinstance(p, LevelsPhase) and p.rebuild is Rebuild.ON_REQUEST]


def rebuild_threshold(phase: LevelsPhase, settings: Any) -> float:
    """The share of changed documents that rebuilds ``phase`` automatically (0: never)."""
    if phase.rebuild_share is None:
        return 0.0
    return max(0.0, float(phase.rebuild_share(settings)))


def read_builds(state: StateStore, index: str, phases: Sequence[str]) -> dict[str, LevelBuild]:
    found = state.get_records(index, NAMESPACE, list(phases)) if phases else {}
    return {name: LevelBuild.from_record(name, found.get(name)) for name in phases}


def read_build(state: StateStore, index: str, phase: str) -> LevelBuild:
    return read_builds(state, index, [phase])[phase]


def _write(state: StateStore, index: str, build: LevelBuild) -> None:
    state.put_records(index, NAMESPACE, {build.phase: build.as_record()})


def _running(state: StateStore, job_id: str) -> bool:
    job = state.get_job(job_id) if job_id else None
    return job is not None and not job.state.is_final


def has_failed_items(state: StateStore, index: str, phase: str, above: int = -1) -> bool:
    """Whether items of levels ``phase`` failed at a level over ``above`` are outstanding."""
    prefix = f"{phase}@"
    for item in state.list_failed_items(index):
        if item.phase.startswith(prefix):
            level = item.phase[len(prefix):]
            if level.isdigit() and int(level) > above:
                return True
    return False


def decide_build(state: StateStore, index: str, job_id: str, phase: LevelsPhase, *,
                 qualified: str, scope: Scope, settings: Any) -> BuildMode:
    """Whether job ``job_id``, reaching ``phase`` at level 0, builds it, finishes its
    failed items, or skips it (its documents then count as changed since the build).

    A job with failed items of the phase outstanding runs it (``FINISH``) without
    rebuilding it: exactly the failed items are built again, level by level, as a
    repair redoes exactly the failed items of any phase; the planner is not asked, so
    nothing is re-planned (a tree is not clustered again) and the documents changed
    since the build stay out of it: that is what a rebuild is for. A node built that
    way joins the levels above it at the next build.
    """
    build = read_build(state, index, qualified)
    # A re-delivered message of this job: decided already. (A build it finished is
    # skipped: the steps after it are claimed already, so nothing runs twice.)
    if build.building == job_id:
        return BuildMode.BUILD
    if build.job_id == job_id:
        return BuildMode.SKIP
    busy = bool(build.building) and _running(state, build.building)
    documents = len(state.document_hashes(index))
    pending = build.since | set(scope.doc_ids) | set(scope.deleted)
    share = len(pending) / max(1, documents)
    threshold = rebuild_threshold(phase, settings)
    reason = ("never_built" if build.built_at is None and not build.building
              else "interrupted" if build.building
              else "requested" if qualified in scope.rebuild
              else "share" if threshold > 0 and share >= threshold
              else "")
    if reason and not busy:
        build.note_changes(scope.doc_ids, scope.deleted)
        build.building = job_id
        build.covers_changed, build.covers_deleted = list(build.changed), list(build.deleted)
        build.documents = documents
        _write(state, index, build)
        log.info("levels_build_started", job_id=job_id, index=index, phase=qualified,
                 reason=reason, changed_since=len(pending), documents=documents)
        return BuildMode.BUILD
    if build.note_changes(scope.doc_ids, scope.deleted):
        _write(state, index, build)
    finish = has_failed_items(state, index, qualified)
    log.info("levels_left_stale", job_id=job_id, index=index, phase=qualified,
             changed_since=len(pending), share=round(share, 4), rebuild_share=threshold,
             built_by_other=build.building if busy else None, finish_failed=finish)
    return BuildMode.FINISH if finish else BuildMode.SKIP


def build_scope(state: StateStore, index: str, job_id: str, qualified: str,
                scope: Scope) -> Scope | None:
    """The scope the planner of an on-request phase sees while job ``job_id`` builds it:
    the job's own, with every document changed or deleted since the last build, and the
    phase named in ``rebuild`` whatever made the job build it (a planner that plans only
    what changed plans it all then). None when the job is not building it (it only
    finishes failed items, and the planner is not asked)."""
    build = read_build(state, index, qualified)
    if build.building != job_id:
        return None
    return Scope(doc_ids=sorted(set(scope.doc_ids) | set(build.covers_changed)),
                 deleted=sorted(set(scope.deleted) | set(build.covers_deleted)),
                 touched=dict(scope.touched), notes=dict(scope.notes),
                 rebuild=sorted(set(scope.rebuild) | {qualified}))


def finish_build(state: StateStore, index: str, job_id: str, qualified: str) -> None:
    """Mark the phase built by ``job_id`` when that job was building it (a no-op for
    any other job, and when repeated)."""
    build = read_build(state, index, qualified)
    if build.building != job_id:
        return
    build.changed = sorted(set(build.changed) - set(build.covers_changed))
    build.deleted = sorted(set(build.deleted) - set(build.covers_deleted))
    build.built_at, build.job_id, build.building = time.time(), job_id, ""
    build.covers_changed, build.covers_deleted = [], []
    _write(state, index, build)
    log.info("levels_built", job_id=job_id, index=index, phase=qualified,
             documents=build.documents, changed_since=len(build.since))


def level_statuses(runtime: Runtime, index: str) -> list[LevelStatus]:
    """The on-request levels phases of the index's method, each with its build state;
    none when the method is not installed here (nothing can rebuild them then)."""
    try:
        method = runtime.index_method(index)
    except ConfigError:
        return []
    phases = on_request_phases(method)
    if not phases:
        return []
    state = runtime.backends.state
    names = [phase_name(method.name, p) for p in phases]
    builds = read_builds(state, index, names)
    documents = len(state.document_hashes(index))
    settings = runtime.phase_context(index, phases[0].name).settings
    found = []
    for phase, name in zip(phases, names, strict=True):
        build = builds[name]
        since = len(build.since)
        found.append(LevelStatus(
            phase=name, state=_state_of(state, build), built_at=build.built_at,
            built_by=build.job_id, documents_at_build=build.documents, changed_since=since,
            changed_share=since / max(1, documents),
            rebuild_share=rebuild_threshold(phase, settings), building_job=build.building))
    return found


def _state_of(state: StateStore, build: LevelBuild) -> BuildState:
    if build.building:
        return (BuildState.BUILDING if _running(state, build.building)
                else BuildState.INTERRUPTED)
    if build.built_at is None:
        return BuildState.NEVER_BUILT
    return BuildState.STALE if build.since else BuildState.CURRENT
