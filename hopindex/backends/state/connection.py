"""The state store's file (a ``SqliteFile``, migrated on open) and its JSON helpers."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from hopindex.backends.sqlite import SqliteFile
from hopindex.backends.state.schema import migrate
from hopindex.core.logging import get_logger

log = get_logger(__name__)

# One encoder for every call: json.dumps with non-default arguments builds a new
# encoder each time, a third of the cost of a 10k-unit put.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def dumps(value: Any) -> str:
    """Compact JSON: analyses and unit provenance are stored for thousands of rows."""
    return _ENCODER.encode(value)


def id_list(ids: Sequence[str]) -> str:
    """Ids as one JSON parameter for ``json_each``: no limit on host parameters, order kept."""
    return dumps(list(ids))


_WHAT = "sqlite state store"


class SqliteConnection:
    """Opens the state file, migrates it, and hands out transactions under one lock."""

    def __init__(self, path: Path) -> None:
        self._db = SqliteFile(path, _WHAT)
        try:
            with self._db.transaction("migrate", write=True) as conn:
                found, current = migrate(conn)
        except BaseException:
            self._db.close()
            raise
        log.info("state_store_opened", path=str(self._db.path), schema_from=found,
                 schema_version=current)

    @property
    def path(self) -> Path:
        return self._db.path

    def _transaction(self, operation: str, *,
                     write: bool) -> AbstractContextManager[sqlite3.Connection]:
        return self._db.transaction(operation, write=write)

    def close(self) -> None:
        if self._db.close():
            log.debug("state_store_closed", path=str(self._db.path))
