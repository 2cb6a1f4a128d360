"""The distributed state store (``redis://host:port/db``): catalog, documents, units,
entities, jobs, failed items.

Each role lives in its own mixin module (``redis_documents``, ``redis_units``,
``redis_catalogue``, ``redis_jobs``); this class adds the index catalog, whose
deletion has to reach every key of the index. Every worker process on every
machine opens its own instance against the same Redis.
"""

from __future__ import annotations

import json

from hopindex.backends.protocols import IndexInfo
from hopindex.backends.state.connection import dumps
from hopindex.backends.state.redis_catalogue import RedisCatalogueMixin
from hopindex.backends.state.redis_connection import CHUNK, text
from hopindex.backends.state.redis_documents import RedisDocumentsMixin
from hopindex.backends.state.redis_failed import RedisFailedItemsMixin
from hopindex.backends.state.redis_jobs import RedisJobsMixin
from hopindex.backends.state.redis_units import RedisUnitsMixin
from hopindex.core.errors import InvalidInputError
from hopindex.core.ids import validate_index_name
from hopindex.core.logging import get_logger

log = get_logger(__name__)

# KEYS: the index's job list, every job. ARGV: the job key prefix. Jobs live outside
# the index's prefix (they are read by id alone), so they are removed by their list.
_DELETE_INDEX_JOBS = """
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, member in ipairs(members) do
  local at = string.find(member, ':', 1, true)
  redis.call('DEL', ARGV[1] .. string.sub(member, at + 1))
  redis.call('ZREM', KEYS[2], member)
end
redis.call('DEL', KEYS[1])
return #members
"""


def _info(name: str, record: str) -> IndexInfo:
    data = json.loads(record)
    return IndexInfo(name=name, method=data["method"], created_at=data["created_at"],
                     options=data["options"])


class RedisStateStore(RedisDocumentsMixin, RedisUnitsMixin, RedisCatalogueMixin,
                      RedisJobsMixin, RedisFailedItemsMixin):
    """``StateStore`` on one Redis database (``RedisStateStore(url, prefix)``), safe for
    many threads, processes and machines at once; every key starts with ``prefix:``."""

    def create_index(self, info: IndexInfo) -> IndexInfo:
        """Register an index; if the name exists, the stored record is returned unchanged."""
        validate_index_name(info.name)
        try:
            record = dumps({"method": info.method, "created_at": info.created_at,
                            "options": info.options})
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"options are not JSON-serialisable: {exc}",
                                    where="options") from exc
        key = self._key("indexes")
        with self._errors("create_index"), self._redis().pipeline(transaction=True) as pipe:
            pipe.hsetnx(key, info.name, record)
            pipe.hget(key, info.name)
            stored: str = pipe.execute()[1]
        return _info(info.name, stored)

    def get_index(self, name: str) -> IndexInfo | None:
        with self._errors("get_index"):
            record = text(self._redis().hget(self._key("indexes"), name))
        return _info(name, record) if record is not None else None

    def list_indexes(self) -> list[IndexInfo]:
        """Every index, by name."""
        with self._errors("list_indexes"):
            reply = self._redis().hgetall(self._key("indexes"))
        records = {str(text(name)): str(text(record)) for name, record in reply.items()}
        return [_info(name, records[name]) for name in sorted(records)]

    def delete_index(self, name: str) -> None:
        """Remove the index and everything stored under it; unknown names are a no-op.

        Not one transaction: the catalog entry goes first, so the index stops being
        listed, then its jobs, then its keys in scan pages. A failure part-way leaves
        keys that calling ``delete_index`` again removes.
        """
        client = self._redis()
        with self._errors("delete_index"):
            client.hdel(self._key("indexes"), name)
            jobs = self._script(_DELETE_INDEX_JOBS)(
                keys=[self._jobs_key(name), self._jobs_key(None)],
                args=[self._key("job", "")])
            removed = 0
            batch: list[str] = []
            for key in client.scan_iter(match=self._index_pattern(name), count=CHUNK):
                batch.append(key)
                if len(batch) >= CHUNK:
                    removed += client.unlink(*batch)
                    batch = []
            if batch:
                removed += client.unlink(*batch)
        log.info("state_index_deleted", index=name, keys=removed, jobs=jobs)
