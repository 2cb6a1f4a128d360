"""Response cache: a re-run of the same prompt costs no call (docs/architecture.md).

The key is a sha256 over model, messages, temperature, response format and
seed, so any change to what the model would see is a miss.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

from hopindex.backends.sqlite import SqliteFile
from hopindex.core.ids import sha256_hex


def cache_key(*, model: str, messages: list[dict[str, str]], temperature: float,
              response_format: str, seed: int | None) -> str:
    payload = json.dumps({"model": model, "messages": messages, "temperature": temperature,
                          "response_format": response_format, "seed": seed},
                         sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return sha256_hex(payload)


class ResponseCache(Protocol):
    async def get_response(self, key: str) -> str | None: ...
    async def put_response(self, key: str, content: str) -> None: ...
    async def close(self) -> None: ...


class SqliteResponseCache:
    """The embedded cache: one table in its own file beside the state store."""

    def __init__(self, path: Path) -> None:
        self._db = SqliteFile(path, "sqlite LLM cache")
        try:
            with self._db.transaction("create schema", write=True) as conn:
                conn.execute("CREATE TABLE IF NOT EXISTS llm_cache"
                             " (key TEXT PRIMARY KEY, content TEXT NOT NULL)")
        except BaseException:
            self._db.close()
            raise

    async def get_response(self, key: str) -> str | None:
        # A keyed SQLite read takes microseconds: a thread hop would cost more.
        with self._db.transaction("get_response", write=False) as conn:
            row = conn.execute("SELECT content FROM llm_cache WHERE key = ?",
                               (key,)).fetchone()
        return None if row is None else str(row[0])

    async def put_response(self, key: str, content: str) -> None:
        with self._db.transaction("put_response", write=True) as conn:
            conn.execute("INSERT OR REPLACE INTO llm_cache (key, content) VALUES (?, ?)",
                         (key, content))

    async def close(self) -> None:
        self._db.close()
