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
from hopindex.core.ids import content_hash
from hopindex.core.models import Document, FailedItem, Unit, UnitKind
from hopindex.methods.registry import get_index_method
from hopindex.scheduler.level_builds import BuildState, LevelStatus

# Failed items listed by name in a description; the counts cover all of them.
MAX_LISTED = 20
# Documents read at a time when verifying their text against their mark.
VERIFY_BATCH = 500


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
    # Of ``documents``, those marked indexed whose stored text is not the text their
    # units were built from (found only when asked to verify).
    changed: list[str] = field(default_factory=list)

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
                                "changed_text": len(self.changed),
                                "failed": self.failed_per_phase(),
                                "items": [i.as_dict() for i in self.failed[:MAX_LISTED]]},
                "running_jobs": list(self.running_jobs),
                "levels": [s.as_dict() for s in self.levels]}


def outstanding_work(state: StateStore, index: str,
                     levels: Sequence[LevelStatus] = (), *, verify: bool = False
                     ) -> Outstanding:
    """The index's unfinished documents and failed items, and its status; ``levels``:
    the build states of its on-request levels phases (``level_statuses``).

    ``verify`` also reads every document's text to find text marked indexed that its
    units were not built from (its hash is not the text's): a writer that stored it
    behind a job's back. Slower, so only a repair and its ``--check`` do it.
    """
    hashes = state.document_hashes(index)
    unmarked = {doc_id for doc_id, digest in hashes.items() if not digest}
    changed = set(changed_under_their_units(state, index, hashes)) if verify else set()
    documents = sorted(unmarked | changed)
    failed = state.list_failed_items(index)
    running = [j.job_id for j in state.open_jobs(index)]
    if running:
        status = IndexStatus.BUILDING
    elif documents or failed or any(s.state is BuildState.INTERRUPTED for s in levels):
        status = IndexStatus.PARTIAL
    else:
        status = IndexStatus.READY
    return Outstanding(status=status, documents=documents, failed=failed, running_jobs=running,
                       levels=list(levels), changed=sorted(changed))


def changed_under_their_units(state: StateStore, index: str,
                              hashes: dict[str, str]) -> list[str]:
    """Documents marked indexed whose stored text is not what their units were built
    from: the text does not hash to the mark, or (for a method that cuts documents into
    chunk passages) the document's chunks are not pieces of its stored text covering it."""
    info = state.get_index(index)
    passages = info is not None and UnitKind.PASSAGE in _writes(info.method)
    marked = sorted(doc_id for doc_id, digest in hashes.items() if digest)
    changed = []
    for start in range(0, len(marked), VERIFY_BATCH):
        batch = marked[start:start + VERIFY_BATCH]
        documents = state.get_documents(index, batch)
        pieces: dict[str, list[str]] = {}
        if passages:
            for unit in state.units_of_documents(index, batch, kinds=[UnitKind.PASSAGE]):
                if _is_chunk(unit):
                    pieces.setdefault(unit.source_doc_ids[0], []).append(unit.text)
        for document in documents:
            if content_hash(document.title, document.text) != hashes[document.doc_id] or (
                    document.doc_id in pieces
                    and not _cut_from(document, pieces[document.doc_id])):
                changed.append(document.doc_id)
    return changed


def _is_chunk(unit: Unit) -> bool:
    """Whether ``unit`` is a chunk passage as the built-in methods cut them (key
    ``<doc id>#<n>``, title then body): another method's passages (a plugin's
    sentences) follow rules of their own, which this check cannot know."""
    if len(unit.source_doc_ids) != 1 or "chunk" not in unit.metadata:
        return False
    return unit.source_key == f"{unit.source_doc_ids[0]}#{unit.metadata['chunk']}"


def _cut_from(document: Document, passages: Sequence[str]) -> bool:
    """Whether ``passages`` (passage units' texts: title, newline, a piece of the body)
    were cut from ``document`` as it is stored, together covering all of its text."""
    heading = f"{document.title}\n" if document.title else ""
    text = document.text
    spans = []
    for passage in passages:
        body = passage[len(heading):]
        at = text.find(body) if passage.startswith(heading) else -1
        if at < 0:
            return False
        spans.append((at, at + len(body)))
    # Chunks are stripped: only whitespace may fall outside them.
    reached = 0
    for start, end in sorted(spans):
        if start > reached and not text[reached:start].isspace():
            return False
        reached = max(reached, end)
    return reached >= len(text) or text[reached:].isspace()


def _writes(method: str) -> frozenset[UnitKind]:
    try:
        return get_index_method(method).writes
    except Exception:  # a method whose plugin is gone: nothing to compare with
        return frozenset()
