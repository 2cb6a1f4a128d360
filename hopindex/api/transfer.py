"""``hopindex export`` / ``hopindex import``: move an index between backends as it is.

An export holds everything the index is made of: its record (name, method),
documents with their content hashes and NLP analyses, units with their vectors
(read back from the vector store), and the entity catalogue (mentions and bridge
units) that incremental ingest plans from. Importing it into other backends
(say the Qdrant and Elasticsearch servers with Redis state, from the embedded
engines) rebuilds the index without embedding a text or calling an LLM again,
and later ingests into it stay incremental.

The entity catalogue is read through the state protocol, entity by entity: the
exported entities are every one an analysis, a title or a unit names, which
covers every way the pipelines record mentions (NER, titles, title lexicon, LLM).
Export a quiet index: a job running meanwhile may be half captured. With a broker
and the embedded engines, the vectors and postings are read and written through the
engine owner (the engines in ``backends`` are then its, see workers/engine_route.py),
so an export or import runs beside the workers without stopping them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from hopindex.api import transfer_format as fmt
from hopindex.backends.protocols import KeywordRecord, UnitPayload, Vector, VectorRecord
from hopindex.backends.registry import Backends
from hopindex.core.errors import ConfigError, InvalidInputError, NotFoundError
from hopindex.core.ids import validate_index_name
from hopindex.core.logging import get_logger
from hopindex.core.models import Document, EntityMention, MentionSource, TextAnalysis, Unit
from hopindex.core.text import normalize_entity, title_entity

log = get_logger(__name__)

# Documents (and their units) read or written per round trip.
BATCH = 256
# Entities per catalogue lookup.
ENTITY_BATCH = 500


@dataclass(slots=True)
class TransferSummary:
    index: str
    documents: int = 0
    units: int = 0
    vectors: int = 0
    mentions: int = 0
    bridges: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _batches(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


# -- export ----------------------------------------------------------------------------

def export_index(backends: Backends, index: str, path: Path) -> TransferSummary:
    """Write ``index`` to ``path`` (``.gz``: compressed); returns what was written."""
    state = backends.state
    info = state.get_index(validate_index_name(index))
    if info is None:
        raise NotFoundError(f"no index {index!r}")
    busy = [job.job_id for job in state.list_jobs(index, limit=20) if not job.state.is_final]
    if busy:
        raise InvalidInputError(f"index {index!r} has unfinished jobs ({', '.join(busy)}); "
                                "export it once they end (or cancel them)", where="index")
    summary = TransferSummary(index=index)
    partial = path.with_name(path.name + ".part")
    with fmt.open_text(partial, "w", compressed=path.suffix == ".gz") as out:
        fmt.write_record(out, fmt.header_record(info, backends.settings.embedder_url))
        doc_ids = sorted(state.document_hashes(index))
        entities = _export_documents(backends, index, doc_ids, out, summary)
        entities |= _export_units(backends, index, doc_ids, out, summary)
        _export_catalogue(backends, index, sorted(entities - {""}), out, summary)
        fmt.write_record(out, {"type": "end", "counts": summary.as_dict()})
    partial.replace(path)
    log.info("index_exported", **summary.as_dict(), path=str(path))
    return summary


def _export_documents(backends: Backends, index: str, doc_ids: list[str], out: IO[str],
                      summary: TransferSummary) -> set[str]:
    """Write the documents; return the entities their titles and analyses name."""
    state = backends.state
    entities: set[str] = set()
    for batch in _batches(doc_ids, BATCH):
        analyses = state.get_analyses(index, batch)
        for document in state.get_documents(index, batch):
            analysis = analyses.get(document.doc_id)
            fmt.write_record(out, fmt.document_record(document, analysis))
            entities.add(title_entity(document.title))
            if analysis is not None:
                entities.update(normalize_entity(span.text) for span in analysis.entities)
            summary.documents += 1
    return entities


def _export_units(backends: Backends, index: str, doc_ids: list[str], out: IO[str],
                  summary: TransferSummary) -> set[str]:
    """Write every unit once, with its vector when it has one; return the entities named."""
    state = backends.state
    seen: set[str] = set()
    entities: set[str] = set()
    for batch in _batches(doc_ids, BATCH):
        units = [u for u in state.units_of_documents(index, batch) if u.unit_id not in seen]
        ids = [u.unit_id for u in units]
        seen.update(ids)
        pending = set(state.unembedded_units(index, ids))
        vectors = {r.unit_id: r.vector for r in backends.vectors.get_vectors(
            index, [i for i in ids if i not in pending])}
        for unit in units:
            vector = vectors.get(unit.unit_id)
            fmt.write_record(out, fmt.unit_record(unit, vector))
            entities.update(unit.entities)
            summary.units += 1
            summary.vectors += vector is not None
    missing = summary.units - summary.vectors
    if missing:
        log.warning("units_exported_without_vectors", index=index, units=missing)
    return entities


def _export_catalogue(backends: Backends, index: str, entities: list[str], out: IO[str],
                      summary: TransferSummary) -> None:
    state = backends.state
    by_doc: dict[str, list[EntityMention]] = {}
    bridges: list[tuple[str, list[str]]] = []
    for batch in _batches(entities, ENTITY_BATCH):
        for mentions in state.mentions_of_entities(index, batch).values():
            for mention in mentions:
                by_doc.setdefault(mention.doc_id, []).append(mention)
        bridges.extend(state.bridge_units_of_entities(index, batch).items())
    for doc_id in sorted(by_doc):
        fmt.write_record(out, fmt.mentions_record(doc_id, by_doc[doc_id]))
        summary.mentions += len(by_doc[doc_id])
    for entity, unit_ids in sorted(bridges):
        fmt.write_record(out, fmt.bridge_record(entity, unit_ids))
        summary.bridges += 1


# -- import ----------------------------------------------------------------------------

class _Importer:
    """Writes records as they stream in, in batches; the index record comes last, so an
    interrupted import leaves no index anyone can query (running it again finishes it)."""

    def __init__(self, backends: Backends, index: str) -> None:
        self.backends = backends
        self.index = index
        self.summary = TransferSummary(index=index)
        self._documents: list[tuple[Document, TextAnalysis | None]] = []
        self._units: list[tuple[Unit, Vector | None]] = []
        self._dimension: int | None = None
        backends.keywords.ensure_index(index)

    def add_document(self, document: Document, analysis: TextAnalysis | None) -> None:
        self._documents.append((document, analysis))
        if len(self._documents) >= BATCH:
            self.flush()

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
            state.put_documents([d for d, _ in self._documents])
            state.put_analyses(self.index, {d.doc_id: a for d, a in self._documents if a})
            self.summary.documents += len(self._documents)
            self._documents = []
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
        records = fmt.read_records(handle, path)
        first = next(records, None)
        if first is None:
            raise InvalidInputError("empty file", where=str(path))
        info = fmt.header_info(first[1], first[0])
        _check_target(backends, info.name, str(first[1].get("embedder_url", "")), first[0])
        importer = _Importer(backends, info.name)
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
    if {k: expected.get(k) for k in ("documents", "units", "vectors")} != {
            "documents": summary.documents, "units": summary.units, "vectors": summary.vectors}:
        raise InvalidInputError(f"the end record counts {expected}, the file held "
                                f"{summary.as_dict()}", where=str(path))
    backends.state.create_index(info)
    log.info("index_imported", **summary.as_dict(), path=str(path))
    return summary


def _check_target(backends: Backends, index: str, embedder_url: str, where: str) -> None:
    validate_index_name(index)
    if backends.state.get_index(index) is not None:
        raise InvalidInputError(f"index {index!r} already exists here; import into backends "
                                "that do not hold it (unit ids are tied to the index name)",
                                where=where)
    if embedder_url != backends.settings.embedder_url:
        raise ConfigError(f"the export's vectors come from {embedder_url!r} but "
                          f"HOPINDEX_EMBEDDER_URL is {backends.settings.embedder_url!r}: "
                          "queries would be embedded by another model; set it to match")


def _import_record(backends: Backends, importer: _Importer, where: str,
                   record: dict[str, Any]) -> dict[str, Any] | None:
    """Apply one record; returns the end record when this is it."""
    index = importer.index
    kind = record["type"]
    try:
        if kind == "document":
            importer.add_document(*fmt.document_of(record, index))
        elif kind == "unit":
            unit, vector = fmt.unit_of(record, index)
            importer.add_unit(unit, vector, where)
        elif kind == "mentions":
            importer.flush()
            doc_id, mentions = fmt.mentions_of(record)
            backends.state.replace_mentions(index, doc_id, mentions, tuple(MentionSource))
            importer.summary.mentions += len(mentions)
        elif kind == "bridge":
            importer.flush()
            backends.state.replace_bridge_units(index, str(record["entity"]),
                                                [str(u) for u in record["unit_ids"]])
            importer.summary.bridges += 1
        elif kind == "end":
            importer.flush()
            return record
        else:
            raise InvalidInputError("a second header", where=where)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"malformed {kind} record: {exc!r}", where=where) from None
    return None
