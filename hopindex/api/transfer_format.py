"""The export file: JSON lines, one record per line, optionally gzip-compressed (``.gz``).

Records, in file order: one ``header`` (format, version, the index record, the
embedder the vectors came from), then ``document``, ``unit`` (with its vector,
little-endian float32 in base64, or null when the unit was never embedded),
``mentions`` (one document's entity mentions), ``group`` (one group of a method's
namespace: its unit ids and member documents), ``record`` (one method record of a
document, by namespace) and a closing ``end`` with the counts, so a truncated file
is detected rather than half-imported. Files of version 1 are read too
(``transfer_v1.py``).
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
from hopindex.core.errors import InvalidInputError
from hopindex.core.json_input import JsonInputError, JsonLimits, parse_json
from hopindex.core.models import Document, EntityMention, Group, MentionSource, Unit, UnitKind

FORMAT = "hopindex-export"
VERSION = 2
RECORD_TYPES = ("header", "document", "unit", "mentions", "group", "record", "end")


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


def header_info(record: dict[str, Any], where: str,
                versions: tuple[int, ...] = (VERSION,)) -> tuple[IndexInfo, int]:
    """The index record of a header, and the file's format version (one of ``versions``)."""
    if record.get("type") != "header" or record.get("format") != FORMAT:
        raise InvalidInputError(f"not a {FORMAT} file (its first line is no {FORMAT} header)",
                                where=where)
    version = record.get("version")
    if version not in versions:
        raise InvalidInputError(f"export format version {version!r} is not supported (this "
                                f"hopindex reads versions {', '.join(map(str, versions))})",
                                where=where)
    info = IndexInfo(name=str(record["index"]), method=str(record["method"]),
                     created_at=float(record["created_at"]), options=dict(record["options"]))
    return info, int(version)


def document_record(document: Document) -> dict[str, Any]:
    return {"type": "document", "doc_id": document.doc_id, "title": document.title,
            "text": document.text, "content_hash": document.content_hash,
            "metadata": document.metadata}


def document_of(record: dict[str, Any], index: str) -> Document:
    return Document(doc_id=record["doc_id"], index=index, title=record["title"],
                    text=record["text"], content_hash=record["content_hash"],
                    metadata=dict(record["metadata"]))


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


def group_record(group: Group) -> dict[str, Any]:
    return {"type": "group", "namespace": group.namespace, "key": group.key,
            "unit_ids": list(group.unit_ids), "members": list(group.members)}


def group_of(record: dict[str, Any]) -> Group:
    return Group(namespace=_namespace(record["namespace"]), key=_text(record["key"]),
                 unit_ids=tuple(_texts(record["unit_ids"])),
                 members=tuple(_texts(record["members"])))


def record_record(namespace: str, key: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"type": "record", "namespace": namespace, "key": key, "value": value}


def record_of(record: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(namespace, key, value) of a ``record`` line."""
    value = record["value"]
    if not isinstance(value, dict):
        raise TypeError(f"a record's value must be an object, not {type(value).__name__}")
    return _namespace(record["namespace"]), _text(record["key"]), value


def _namespace(value: object) -> str:
    if not _text(value):
        raise ValueError("a namespace must not be empty")
    return str(value)


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _texts(values: object) -> list[str]:
    if not isinstance(values, list):
        raise TypeError(f"expected a list of strings, got {type(values).__name__}")
    return [_text(v) for v in values]


def read_records(handle: IO[str], path: Path, types: tuple[str, ...] = RECORD_TYPES
                 ) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, record) per line, each of one of ``types``; a malformed line is an error
    naming its number."""
    for number, line in enumerate(handle, start=1):
        where = f"{path}:{number}"
        if not line.strip():
            continue
        try:
            # Bounded like every input read (no string limit but the line's own length).
            record = parse_json(line, JsonLimits(max_string_chars=len(line)))
        except JsonInputError as exc:
            raise InvalidInputError(exc.described, where=where) from None
        if not isinstance(record, dict) or record.get("type") not in types:
            raise InvalidInputError(f"expected a record with a type among {types}",
                                    where=where)
        yield where, record


def record_line(record: dict[str, Any]) -> str:
    """One record as its line of the file, newline included."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_record(handle: IO[str], record: dict[str, Any]) -> None:
    handle.write(record_line(record))
