"""Decision records (paper §9, "Retrieval traceability"): what one query decided and why.

Every query returns its record as ``QueryResult.trace``; with
``HOPINDEX_BRIDGERAG_RECORDS=jsonl`` (or ``--param record=jsonl``) it is also
appended, one JSON object per line, to ``$DATA_DIR/decisions/INDEX.jsonl`` of the
process that ran the query. Appends are single ``write`` calls on an ``O_APPEND``
file, so queries of several threads or processes on one machine never interleave.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hopindex.core.ids import validate_index_name

RECORDS_DIR = "decisions"
_SCORE_DIGITS = 6


@dataclass(frozen=True, slots=True)
class PoolEntry:
    unit_id: str
    doc_ids: tuple[str, ...]
    label: str  # the passage title, else the start of the unit's text
    found_by: tuple[str, ...]
    pool_score: float
    svo_score: float
    judge_score: float | None  # None: not judged (condition A, a fallback, left unscored)
    fused: float
    rank: int  # 1-based place in the fused ranking (before bridge_position=first)

    def as_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "unit_id": self.unit_id, "doc_ids": list(self.doc_ids),
                "label": self.label,
                "found_by": list(self.found_by), "pool_score": _round(self.pool_score),
                "svo_score": _round(self.svo_score),
                "judge_score": None if self.judge_score is None else _round(self.judge_score),
                "fused": _round(self.fused)}


@dataclass(slots=True)
class DecisionRecord:
    index: str
    question: str
    params: dict[str, Any]
    retrieval: str
    bridges: list[dict[str, Any]] = field(default_factory=list)
    svo_queries: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    pool: list[PoolEntry] = field(default_factory=list)
    judge: dict[str, Any] = field(default_factory=dict)
    ranked_by: str = ""  # the condition that ordered the pool: A, B or C
    # Every step that degraded ({"step", "reason"}), as the query result's ``degraded``.
    degraded: list[dict[str, str]] = field(default_factory=list)
    top: list[dict[str, Any]] = field(default_factory=list)
    llm_calls: int = 0
    vector_searches: int = 0
    record_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created_at: float = field(default_factory=time.time)
    persisted_to: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"record_id": self.record_id, "created_at": round(self.created_at, 3),
                "index": self.index, "question": self.question, "params": self.params,
                "retrieval": self.retrieval, "bridges": self.bridges,
                "svo_queries": self.svo_queries, "entities": self.entities,
                "pool": [p.as_dict() for p in self.pool], "judge": self.judge,
                "ranked_by": self.ranked_by, "degraded": self.degraded, "top": self.top,
                "llm_calls": self.llm_calls, "vector_searches": self.vector_searches,
                "persisted_to": self.persisted_to}


def records_path(data_dir: Path, index: str) -> Path:
    return data_dir / RECORDS_DIR / f"{validate_index_name(index)}.jsonl"


def append_record(path: Path, record: DecisionRecord) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record.as_dict(), ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every record in a JSONL file, oldest first."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _round(value: float) -> float:
    return round(value, _SCORE_DIGITS)
