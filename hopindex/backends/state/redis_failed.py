"""Work items that failed for good, per index, in Redis (``FailedItemStore``).

One hash per index, ``P:ix:I:failed``, field ``<phase>:<item>`` → the record as JSON.
Phase names contain no ``:``, so a field splits at its first colon whatever the item
holds; the hash lives under the index's prefix, so deleting the index removes it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from hopindex.backends.state.connection import dumps
from hopindex.backends.state.redis_connection import CHUNK, RedisConnection, chunked
from hopindex.core.models import FailedItem

# The phases failed items were recorded under before phase names were qualified by
# their method; layout 2 renames them to "<method>.stage1" and "<method>.stage2".
LEGACY_PHASES = ("stage1", "stage2")


class RedisFailedItemsMixin(RedisConnection):
    def _failed_key(self, index: str) -> str:
        return f"{self._base(index)}failed"

    def put_failed_items(self, index: str, items: Sequence[FailedItem]) -> None:
        if not items:
            return
        key = self._failed_key(index)
        with self._errors("put_failed_items"):
            for chunk in chunked(items, CHUNK):
                self._redis().hset(key, mapping={f"{i.phase}:{i.item}": dumps(i.as_dict())
                                                 for i in chunk})

    def list_failed_items(self, index: str, phase: str | None = None) -> list[FailedItem]:
        """The index's failed items by phase, then item."""
        with self._errors("list_failed_items"):
            reply = self._redis().hgetall(self._failed_key(index))
        found = [FailedItem.from_dict(json.loads(data)) for data in reply.values()]
        return sorted((i for i in found if phase is None or i.phase == phase),
                      key=lambda i: (i.phase, i.item))

    def clear_failed_items(self, index: str, phase: str, items: Sequence[str]) -> None:
        if not items:
            return
        key = self._failed_key(index)
        with self._errors("clear_failed_items"):
            for chunk in chunked(items, CHUNK):
                self._redis().hdel(key, *(f"{phase}:{item}" for item in chunk))

    # -- layout upgrade ----------------------------------------------------------------------

    def _qualify_legacy_failed_items(self, index: str, method: str) -> int:
        """Rename the index's items of the bare phases ``stage1``/``stage2`` to
        ``<method>.stage1``/``<method>.stage2``, in the field and in the record.

        An item already recorded under the new name is the newer failure and is kept.
        Each item is written anew before its old field goes, so a redone upgrade
        finishes an interrupted one. Returns how many legacy items there were.
        """
        key = self._failed_key(index)
        client = self._redis()
        # HSCAN may repeat a field: the dict keeps each once.
        legacy = {field: value for field, value in client.hscan_iter(key, count=CHUNK)
                  if field.partition(":")[0] in LEGACY_PHASES}
        for chunk in chunked(sorted(legacy)):
            with client.pipeline(transaction=True) as pipe:
                for field in chunk:
                    phase, _, item = field.partition(":")
                    record = json.loads(legacy[field])
                    record["phase"] = f"{method}.{phase}"
                    pipe.hsetnx(key, f"{record['phase']}:{item}", dumps(record))
                    pipe.hdel(key, field)
                pipe.execute()
        return len(legacy)
