"""The embedded SQLite response cache: the ``ResponseCache`` contract over one file."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopindex.backends.llm.cache import ResponseCache, SqliteResponseCache
from hopindex.testing.contracts.response_cache import OpenCache, ResponseCacheContract


class TestSqliteResponseCache(ResponseCacheContract):
    @pytest.fixture
    def open_cache(self, tmp_path: Path) -> OpenCache:
        path = tmp_path / "llm-cache.sqlite3"

        def open_cache() -> ResponseCache:
            return SqliteResponseCache(path)

        return open_cache
