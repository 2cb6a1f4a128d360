"""``hopindex export`` / ``hopindex import``: move an index between backends as it is.

An export holds everything the index is made of: its record (name, method),
documents with their content hashes, units with their vectors (read back from the
vector store), the entity mentions incremental ingest plans from, every group of
every namespace (what a method's group phases built, with their member documents)
and the method records of the documents (such as their NLP analyses). Importing it
into other backends (say the Qdrant and Elasticsearch servers with Redis state,
from the embedded engines) rebuilds the index without embedding a text or calling
an LLM again, and later ingests into it stay incremental.

Groups and records are read through the state protocol by namespace, so the export
knows no method: a method's namespaces go along whatever they are called. Records
are a method's per-document state, keyed by document id (``RecordStore``), and the
runtime's build state of the levels phases built on request (``runtime.levels``,
keyed by phase: scheduler/level_builds.py).
An export is refused while a job of the index runs (it would be half captured). A
server streams the same records (``GET /v1/indexes/{name}/export``) and
``save_export`` writes them where ``hopindex export --api URL`` runs, so the file is
the one a local export writes. With a broker and the embedded engines, the vectors
and postings are read and written through the engine owner (the engines in
``backends`` are then its, see workers/engine_route.py), so an export or import runs
beside the workers without stopping them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hopindex.api import transfer_format as fmt
from hopindex.api import transfer_v1 as v1
from hopindex.backends.protocols import KeywordRecord, UnitPayload, Vector, VectorRecord
from hopindex.backends.registry import Backends
from hopindex.core.errors import (
    BackendUnavailableError,
    ConfigError,
    HopindexError,
    IndexBusyError,
    IndexExistsError,
    InvalidInputError,
    NotFoundError,
)
from hopindex.core.ids import validate_index_name
from hopindex.core.logging import get_logger
from hopindex.core.models import Document, Group, MentionSource, Unit
from hopindex.methods.plugin import phase_name
from hopindex.methods.registry import get_index_method
from hopindex.scheduler.level_builds import on_request_phases

log = get_logger(__name__)

# Documents (and their units, mentions or records), or groups, read or written per
# round trip.
BATCH = 256
# What the end line counts and an import checks against what it read.
_COUNTED = ("documents", "units", "vectors", "mentions", "groups", "records")


@dataclass(slots=True)
class TransferSummary:
    index: str
    documents: int = 0
    units: int = 0
    vectors: int = 0
    mentions: int = 0
    groups: int = 0
    records: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _batches(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


# -- export ----------------------------------------------------------------------------

class IndexExport:
    """One export of ``index``, checked when made (the index exists, no job of it is
    running), so that a server can still refuse it before answering; ``records()`` then
    gives its records in file order, and ``summary`` counts what they held."""

    def __init__(self, backends: Backends, index: str) -> None:
        state = backends.state
        info = state.get_index(validate_index_name(index))
        if info is None:
            raise NotFoundError(f"no index {index!r}")
        busy = [j.job_id for j in state.list_jobs(index, limit=20) if not j.state.is_final]
        if busy:
            raise IndexBusyError(f"index {index!r} has unfinished jobs ({', '.join(busy)}); "
                                 "export it once they end (or cancel them)")
        self.backends = backends
        self.info = info
        self.summary = TransferSummary(index=index)

    def records(self) -> Iterator[dict[str, Any]]:
        backends, index, summary = self.backends, self.info.name, self.summary
        yield fmt.header_record(self.info, backends.settings.embedder_url)
        doc_ids = sorted(backends.state.document_hashes(index))
        yield from _export_documents(backends, index, doc_ids, summary)
        yield from _export_units(backends, index, doc_ids, summary)
        yield from _export_mentions(backends, index, doc_ids, summary)
        yield from _export_groups(backends, index, summary)
        yield from _export_records(backends, index,
                                   doc_ids + _level_build_keys(self.info.method), summary)
        yield {"type": "end", "counts": summary.as_dict()}


def export_index(backends: Backends, index: str, path: Path) -> TransferSummary:
    """Write ``index`` to ``path`` (``.gz``: compressed); returns what was written."""
    export = IndexExport(backends, index)
    partial = path.with_name(path.name + ".part")
    with fmt.open_text(partial, "w", compressed=path.suffix == ".gz") as out:
        for record in export.records():
            fmt.write_record(out, record)
    partial.replace(path)
    log.info("index_exported", **export.summary.as_dict(), path=str(path))
    return export.summary


def save_export(lines: Iterable[str], path: Path, index: str) -> TransferSummary:
    """Write the lines of ``index``'s export as a server streams them (``GET
    /v1/indexes/{name}/export``) to ``path``, as ``export_index`` writes a local one:
    through ``PATH.part``, renamed once the end record arrived; a stream cut short
    leaves no file. Returns the end record's counts."""
    partial = path.with_name(path.name + ".part")
    first, last = "", ""
    try:
        with fmt.open_text(partial, "w", compressed=path.suffix == ".gz") as out:
            for line in lines:
                first = first or line
                last = line
                out.write(line)
        summary = _streamed_summary(first, last, index)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(path)
    return summary


def _streamed_summary(first: str, last: str, index: str) -> TransferSummary:
    cut = BackendUnavailableError(f"the export of index {index!r} ended before its end "
                                  "record (the server's log says why); nothing was written")
    if not first:
        raise cut
    info, _ = fmt.header_info(json.loads(first), "line 1")
    try:
        end = json.loads(last)
        counts = end["counts"] if end.get("type") == "end" else None
    except (ValueError, KeyError, AttributeError):
        counts = None
    if info.name != index or not isinstance(counts, dict):
        raise cut
    return TransferSummary(index=index, **{k: int(counts.get(k, 0)) for k in _COUNTED})


def _export_documents(backends: Backends, index: str, doc_ids: list[str],
                      summary: TransferSummary) -> Iterator[dict[str, Any]]:
    for batch in _batches(doc_ids, BATCH):
        for document in backends.state.get_documents(index, batch):
            yield fmt.document_record(document)
            summary.documents += 1


def _export_units(backends: Backends, index: str, doc_ids: list[str],
                  summary: TransferSummary) -> Iterator[dict[str, Any]]:
    """Every unit once, with its vector when it has one."""
    state = backends.state
    seen: set[str] = set()
    for batch in _batches(doc_ids, BATCH):
        units = [u for u in state.units_of_documents(index, batch) if u.unit_id not in seen]
        ids = [u.unit_id for u in units]
        seen.update(ids)
        pending = set(state.unembedded_units(index, ids))
        vectors = {r.unit_id: r.vector for r in backends.vectors.get_vectors(
            index, [i for i in ids if i not in pending])}
        for unit in units:
            vector = vectors.get(unit.unit_id)
            yield fmt.unit_record(unit, vector)
            summary.units += 1
            summary.vectors += vector is not None
    missing = summary.units - summary.vectors
    if missing:
        log.warning("units_exported_without_vectors", index=index, units=missing)


def _export_mentions(backends: Backends, index: str, doc_ids: list[str],
                     summary: TransferSummary) -> Iterator[dict[str, Any]]:
    for batch in _batches(doc_ids, BATCH):
        for doc_id, mentions in sorted(
                backends.state.mentions_of_documents(index, batch).items()):
            yield fmt.mentions_record(doc_id, mentions)
            summary.mentions += len(mentions)


def _export_groups(backends: Backends, index: str,
                   summary: TransferSummary) -> Iterator[dict[str, Any]]:
    state = backends.state
    for namespace in state.namespaces_of_groups(index):
        for batch in _batches(state.list_group_keys(index, namespace), BATCH):
            for group in state.get_groups(index, namespace, batch).values():
                yield fmt.group_record(group)
                summary.groups += 1


def _level_build_keys(method_name: str) -> list[str]:
    """The keys of the runtime's records of the method's levels phases built on request
    (their build state goes along, so the imported index is not rebuilt from scratch)."""
    try:
        method = get_index_method(method_name)
    except HopindexError:
        return []  # not installed here: the import rebuilds what it finds never built
    return [phase_name(method.name, p) for p in on_request_phases(method)]


def _export_records(backends: Backends, index: str, keys: list[str],
                    summary: TransferSummary) -> Iterator[dict[str, Any]]:
    """The records of every namespace under ``keys``: document ids (a method's records
    of documents) and the runtime's own keys."""
    state = backends.state
    for namespace in state.list_record_namespaces(index):
        for batch in _batches(keys, BATCH):
            for key, value in state.get_records(index, namespace, batch).items():
                yield fmt.record_record(namespace, key, value)
                summary.records += 1


# -- import ----------------------------------------------------------------------------

class _Importer:
    """Writes records as they stream in, in batches; the index record comes last, so an
    interrupted import leaves no index anyone can query (running it again finishes it)."""

    def __init__(self, backends: Backends, index: str, version: int) -> None:
        self.backends = backends
        self.index = index
        self.version = version
        self.summary = TransferSummary(index=index)
        self._documents: list[Document] = []
        self._units: list[tuple[Unit, Vector | None]] = []
        self._records: dict[str, dict[str, dict[str, Any]]] = {}
        self._pending_records = 0
        self._dimension: int | None = None
        backends.keywords.ensure_index(index)

    def add_document(self, document: Document) -> None:
        self._documents.append(document)
        if len(self._documents) >= BATCH:
            self.flush()

    def add_record(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        self._records.setdefault(namespace, {})[key] = value
        self._pending_records += 1
        if self._pending_records >= BATCH:
            self.flush()

    def add_group(self, group: Group) -> None:
        self.flush()
        self.backends.state.replace_group(self.index, group.namespace, group.key,
                                          group.unit_ids, group.members)
        self.summary.groups += 1

    def add_unit(self, unit: Unit, vector: Vector | None, where: str) -> None:
        if vector is not None:
            if self._dimension is None:
                self._dimension = int(vector.shape[0])
                self.backends.vectors.ensure_index(self.index, self._dimension)
            elif vector.shape[0] != self._dimension:
                raise InvalidInputError(f"vector of {vector.shape[0]} dimensions, the index "
                                        f"has {self._dimension}", where=where)
        self._units.append((unit, vector))
        if len(self._units) >= BATCH:
            self.flush()

    def flush(self) -> None:
        state = self.backends.state
        if self._documents:
            state.put_documents(self._documents)
            self.summary.documents += len(self._documents)
            self._documents = []
        for namespace, records in self._records.items():
            state.put_records(self.index, namespace, records)
        self.summary.records += self._pending_records
        self._records, self._pending_records = {}, 0
        if self._units:
            state.put_units([u for u, _ in self._units])
            embedded = [(u, v) for u, v in self._units if v is not None]
            payloads = [UnitPayload.of(u) for u, _ in embedded]
            self.backends.vectors.upsert_vectors(self.index, [
                VectorRecord(unit_id=u.unit_id, vector=v, payload=p)
                for (u, v), p in zip(embedded, payloads, strict=True)])
            self.backends.keywords.index_units(self.index, [
                KeywordRecord(unit_id=u.unit_id, text=u.text, payload=p)
                for (u, _), p in zip(embedded, payloads, strict=True)])
            state.mark_embedded(self.index, [u.unit_id for u, _ in embedded])
            self.summary.units += len(self._units)
            self.summary.vectors += len(embedded)
            self._units = []


def import_index(backends: Backends, path: Path) -> TransferSummary:
    """Recreate the exported index in ``backends``; it must not exist there yet."""
    with fmt.open_text(path, "r") as handle:
        records = fmt.read_records(handle, path, fmt.RECORD_TYPES + v1.RECORD_TYPES)
        first = next(records, None)
        if first is None:
            raise InvalidInputError("empty file", where=str(path))
        info, version = fmt.header_info(first[1], first[0], (v1.VERSION, fmt.VERSION))
        _check_target(backends, info.name, str(first[1].get("embedder_url", "")))
        importer = _Importer(backends, info.name, version)
        ended: dict[str, Any] | None = None
        for where, record in records:
            if ended is not None:
                raise InvalidInputError("records after the end record", where=where)
            ended = _import_record(backends, importer, where, record)
    if ended is None:
        raise InvalidInputError("the file ends without its end record: it is truncated; "
                                "export it again", where=str(path))
    summary = importer.summary
    expected = ended.get("counts", {})
    if not isinstance(expected, dict):
        raise InvalidInputError("the end record's counts are not an object", where=str(path))
    if version == v1.VERSION:
        # Version 1 counted no records, and its groups under another name.
        expected = v1.current_counts(expected)
    counted = [name for name in _COUNTED if version != v1.VERSION or name in expected]
    held = summary.as_dict()
    if {k: expected.get(k) for k in counted} != {k: held[k] for k in counted}:
        raise InvalidInputError(f"the end record counts {expected}, the file held "
                                f"{held}", where=str(path))
    backends.state.create_index(info)
    log.info("index_imported", **summary.as_dict(), version=version, path=str(path))
    return summary


def _check_target(backends: Backends, index: str, embedder_url: str) -> None:
    validate_index_name(index)
    if backends.state.get_index(index) is not None:
        raise IndexExistsError(f"index {index!r} exists here; delete it first, or import "
                               "into backends that do not hold it (unit ids are tied to the "
                               "index name)")
    if embedder_url != backends.settings.embedder_url:
        raise ConfigError(f"the export's vectors come from {embedder_url!r} but "
                          f"HOPINDEX_EMBEDDER_URL is {backends.settings.embedder_url!r}: "
                          "queries would be embedded by another model; set it to match")


def _import_record(backends: Backends, importer: _Importer, where: str,
                   record: dict[str, Any]) -> dict[str, Any] | None:
    """Apply one record; returns the end record when this is it."""
    index = importer.index
    kind = record["type"]
    legacy = importer.version == v1.VERSION
    try:
        if kind == "document":
            document = fmt.document_of(record, index)
            importer.add_document(document)
            if legacy and (analysis := v1.analysis_record(record)) is not None:
                importer.add_record(analysis[0], document.doc_id, analysis[1])
        elif kind == "unit":
            unit, vector = fmt.unit_of(record, index)
            importer.add_unit(unit, vector, where)
        elif kind == "mentions":
            importer.flush()
            doc_id, mentions = fmt.mentions_of(record)
            backends.state.replace_mentions(index, doc_id, mentions, tuple(MentionSource))
            importer.summary.mentions += len(mentions)
        elif kind == "group" and not legacy:
            importer.add_group(fmt.group_of(record))
        elif kind == "record" and not legacy:
            importer.add_record(*fmt.record_of(record))
        elif kind == v1.GROUP_LINE and legacy:
            importer.flush()  # the group's units, whose documents are its members
            importer.add_group(v1.group_of_line(backends.state, index, record))
        elif kind == "end":
            importer.flush()
            return record
        elif kind == "header":
            raise InvalidInputError("a second header", where=where)
        else:
            raise InvalidInputError(f"a {kind} record in a version {importer.version} file",
                                    where=where)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"malformed {kind} record: {exc!r}", where=where) from None
    return None
