"""A changed file replaces its documents; an unchanged section keeps its units.

Documents read from a structured file (a PDF's or a Markdown file's sections) have
ids ``path`` and ``path#slug``. When an ingest brings a file again, the documents of
that file the index holds and the new reading no longer has (a section deleted or
renamed) are removed with the ingest, as a delete would remove them. A section
whose text is unchanged is not recomputed, but the layout it records may have moved
(a page added before it): its document's layout and its passages' citations are
brought up to date in place, with no unit rebuilt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from hopindex.backends.protocols import StateStore
from hopindex.core.citations import PassageCiter, layout_of
from hopindex.core.models import Document, Unit, UnitKind

# Fields of a layout that say where the text is, not what it is; "origin" (the path
# as the user named it) changes with the folder named and is not layout.
_PLACE_FIELDS = ("file", "format", "section", "pages", "page_starts", "outline",
                 "file_sha256")


def file_of(document: Document) -> str | None:
    """The file a document was split from, when its id says so (``path`` or ``path#…``)."""
    layout = layout_of(document.metadata)
    if layout is None:
        return None
    file = str(layout["file"])
    if document.doc_id == file or document.doc_id.startswith(file + "#"):
        return file
    return None


def stale_documents(known_ids: Iterable[str], documents: Sequence[Document]) -> list[str]:
    """Ids the index holds from the files ``documents`` were read from, that the new
    reading of those files no longer has. A file read in part (a section refused, a
    page without text: its layout says ``file_complete: false``) removes nothing: what
    it lacks may be what failed, not what was deleted."""
    files = {f for d in documents
             if (f := file_of(d)) is not None and _read_whole(d)}
    if not files:
        return []
    fresh = {d.doc_id for d in documents}
    return sorted(i for i in known_ids
                  if i not in fresh and (i in files or i.partition("#")[0] in files))


def _read_whole(document: Document) -> bool:
    layout = layout_of(document.metadata) or {}
    return layout.get("file_complete", True) is not False


def refresh_layouts(state: StateStore, index: str, unchanged: Sequence[Document]) -> int:
    """Bring the stored layout of unchanged documents up to date, with their passages'
    citations; returns how many moved. Documents read from records have no layout and
    are not read back."""
    candidates = {d.doc_id: d for d in unchanged if file_of(d) is not None}
    if not candidates:
        return 0
    stored = state.get_documents(index, sorted(candidates))
    moved = [replace(candidates[s.doc_id], content_hash=s.content_hash) for s in stored
             if _place(s.metadata) != _place(candidates[s.doc_id].metadata)]
    if not moved:
        return 0
    state.put_documents(moved)
    by_id = {d.doc_id: d for d in moved}
    passages = state.units_of_documents(index, sorted(by_id), kinds=(UnitKind.PASSAGE,))
    state.put_units([with_citation(u, by_id[u.source_doc_ids[0]]) for u in passages
                     if len(u.source_doc_ids) == 1 and u.source_doc_ids[0] in by_id])
    return len(moved)


def with_citation(unit: Unit, document: Document) -> Unit:
    """A passage unit of ``document`` with its citation brought up to date."""
    citer = PassageCiter(document.metadata, document.text, document.title)
    return replace(unit, metadata={**unit.metadata, **citer.metadata_for(unit.text)})


def _place(metadata: Mapping[str, Any]) -> dict[str, Any]:
    layout = layout_of(metadata) or {}
    return {name: layout.get(name) for name in _PLACE_FIELDS}
