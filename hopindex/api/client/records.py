"""What ``ingest`` takes, sorted into paths and in-memory records.

Records in memory travel as one JSONL file named ``records.jsonl`` through either
client: written to a temporary folder and read there (in this process) or uploaded
(to a server), so the one reader checks them and a bad record is named alike,
``records.jsonl:3``, whichever client took it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from hopindex.core.errors import InvalidInputError
from hopindex.readers import ReadError, ReadResult, read_paths

RECORDS_FILE = "records.jsonl"


def split_source(source: Sequence[Path | str] | Sequence[Mapping[str, Any]] | Path | str
                 ) -> tuple[list[Path], list[Mapping[str, Any]]]:
    """``source`` as paths or as records (one kind per call: a mix is an input error
    naming ``source``)."""
    items: Sequence[Any] = [source] if isinstance(source, (str, Path)) else source
    paths: list[Path] = []
    records: list[Mapping[str, Any]] = []
    for position, item in enumerate(items):
        if isinstance(item, (str, Path)):
            paths.append(Path(item))
        elif isinstance(item, Mapping):
            records.append(item)
        else:
            raise InvalidInputError(f"item {position} is a {type(item).__name__}; give paths "
                                    "of files and folders, or record mappings", where="source")
    if paths and records:
        raise InvalidInputError("give paths or records in one ingest, not both",
                                where="source")
    if not paths and not records:
        raise InvalidInputError("nothing to ingest: give paths or records", where="source")
    return paths, records


@contextmanager
def records_file(records: Sequence[Mapping[str, Any]]) -> Iterator[Path]:
    """The records as ``records.jsonl`` in a temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="hopindex-records-") as tmp:
        path = Path(tmp) / RECORDS_FILE
        with path.open("w", encoding="utf-8") as out:
            for position, record in enumerate(records):
                try:
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                except (TypeError, ValueError) as exc:
                    raise InvalidInputError(f"cannot be written as JSON: {exc}",
                                            where=f"{RECORDS_FILE}:{position + 1}") from None
        yield path


def read_records(records: Sequence[Mapping[str, Any]], *, max_document_bytes: int
                 ) -> ReadResult:
    """The records read as the server reads an uploaded ``records.jsonl``."""
    with records_file(records) as path:
        result = read_paths([path], max_document_bytes=max_document_bytes)
        prefix = f"{path.parent}/"
    return ReadResult(
        documents=[replace(d, origin=d.origin.removeprefix(prefix)) for d in result.documents],
        errors=[ReadError(e.origin.removeprefix(prefix), e.reason.replace(prefix, ""))
                for e in result.errors])
