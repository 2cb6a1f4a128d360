"""The export file: JSON lines, one record per line, optionally gzip-compressed (``.gz``).

Records, in file order: one ``header`` (format, version, the index record, the
embedder the vectors came from), then ``document`` (with its NLP analysis),
``unit`` (with its vector, little-endian float32 in base64, or null when the unit
was never embedded), ``mentions`` (one document's entity mentions), ``bridge``
(an entity's bridge units) and a closing ``end`` with the counts, so a truncated
file is detected rather than half-imported.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np

from hopindex.backends.protocols import IndexInfo, Vector
from hopindex.backends.state.documents import decode_analysis, encode_analysis
from hopindex.core.errors import InvalidInputError
from hopindex.core.json_input import JsonInputError, JsonLimits, parse_json
from hopindex.core.models import (
    Document,
    EntityMention,
    MentionSource,
    TextAnalysis,
    Unit,
    UnitKind,
)

FORMAT = "hopindex-export"
VERSION = 1
RECORD_TYPES = ("header", "document", "unit", "mentions", "bridge", "end")


@contextmanager
def open_text(path: Path, mode: str, *, compressed: bool | None = None) -> Iterator[IO[str]]:
    """``path`` as UTF-8 text, through gzip when ``compressed`` (default: it ends in .gz)."""
    if path.suffix == ".gz" if compressed is None else compressed:
        with (gzip.GzipFile(path, mode + "b") as raw,
              io.TextIOWrapper(raw, encoding="utf-8") as text):
            yield text
    else:
        with path.open(mode, encoding="utf-8") as handle:
            yield handle


def header_record(info: IndexInfo, embedder_url: str) -> dict[str, Any]:
    return {"type": "header", "format": FORMAT, "version": VERSION, "index": info.name,
            "method": info.method, "created_at": info.created_at, "options": info.options,
            "embedder_url": embedder_url}


def header_info(record: dict[str, Any], where: str) -> IndexInfo:
    if record.get("type") != "header" or record.get("format") != FORMAT:
        raise InvalidInputError(f"not a {FORMAT} file (its first line is no {FORMAT} header)",
                                where=where)
    if record.get("version") != VERSION:
        raise InvalidInputError(f"export format version {record.get('version')!r} is not "
                                f"supported (this hopindex reads version {VERSION})", where=where)
    return IndexInfo(name=str(record["index"]), method=str(record["method"]),
                     created_at=float(record["created_at"]), options=dict(record["options"]))


def document_record(document: Document, analysis: TextAnalysis | None) -> dict[str, Any]:
    return {"type": "document", "doc_id": document.doc_id, "title": document.title,
            "text": document.text, "content_hash": document.content_hash,
            "metadata": document.metadata,
            "analysis": json.loads(encode_analysis(analysis)) if analysis else None}


def document_of(record: dict[str, Any], index: str) -> tuple[Document, TextAnalysis | None]:
    document = Document(doc_id=record["doc_id"], index=index, title=record["title"],
                        text=record["text"], content_hash=record["content_hash"],
                        metadata=dict(record["metadata"]))
    analysis = record.get("analysis")
    return document, decode_analysis(json.dumps(analysis)) if analysis is not None else None


def unit_record(unit: Unit, vector: Vector | None) -> dict[str, Any]:
    encoded = (base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
               if vector is not None else None)
    return {"type": "unit", "unit_id": unit.unit_id, "kind": unit.kind.value,
            "text": unit.text, "source_doc_ids": list(unit.source_doc_ids),
            "method": unit.method, "source_key": unit.source_key,
            "entities": list(unit.entities), "level": unit.level, "metadata": unit.metadata,
            "vector": encoded}


def unit_of(record: dict[str, Any], index: str) -> tuple[Unit, Vector | None]:
    unit = Unit(unit_id=record["unit_id"], index=index, kind=UnitKind(record["kind"]),
                text=record["text"], source_doc_ids=tuple(record["source_doc_ids"]),
                method=record["method"], source_key=record["source_key"],
                entities=tuple(record["entities"]), level=int(record["level"]),
                metadata=dict(record["metadata"]))
    encoded = record.get("vector")
    vector = (np.frombuffer(base64.b64decode(encoded), dtype="<f4").astype(np.float32)
              if encoded is not None else None)
    return unit, vector


def mentions_record(doc_id: str, mentions: list[EntityMention]) -> dict[str, Any]:
    return {"type": "mentions", "doc_id": doc_id,
            "mentions": [[m.entity, m.source.value, m.count] for m in mentions]}


def mentions_of(record: dict[str, Any]) -> tuple[str, list[EntityMention]]:
    doc_id = str(record["doc_id"])
    return doc_id, [EntityMention(entity=str(entity), doc_id=doc_id,
                                  source=MentionSource(source), count=int(count))
                    for entity, source, count in record["mentions"]]


def bridge_record(entity: str, unit_ids: list[str]) -> dict[str, Any]:
    return {"type": "bridge", "entity": entity, "unit_ids": unit_ids}


def read_records(handle: IO[str], path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, record) per line; a malformed line is an error naming its number."""
    for number, line in enumerate(handle, start=1):
        where = f"{path}:{number}"
        if not line.strip():
            continue
        try:
            # Bounded like every input read (no string limit but the line's own length).
            record = parse_json(line, JsonLimits(max_string_chars=len(line)))
        except JsonInputError as exc:
            raise InvalidInputError(exc.described, where=where) from None
        if not isinstance(record, dict) or record.get("type") not in RECORD_TYPES:
            raise InvalidInputError(f"expected a record with a type among {RECORD_TYPES}",
                                    where=where)
        yield where, record


def write_record(handle: IO[str], record: dict[str, Any]) -> None:
    handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    handle.write("\n")
