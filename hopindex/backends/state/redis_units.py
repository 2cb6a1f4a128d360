"""Units, their provenance and the embedded flag, kept consistent by Lua scripts.

Per index: ``unit`` (unit id → the unit as a JSON list), ``umeta`` (unit id →
``seq<TAB>kind<TAB>text digest<TAB>sources JSON``, what the scripts need to undo
an older version), ``useq`` (first-write counter: ``units_of_documents`` returns
units in write order, like SQLite's rowid), ``embedded`` (set of ids with a
current vector), ``kind:<kind>`` (set per kind, for counts and kind filters) and
``src:<doc id>`` (set of unit ids citing the document).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from redis.client import Pipeline

from hopindex.backends.state.connection import dumps
from hopindex.backends.state.redis_connection import CHUNK, RedisConnection, unique
from hopindex.backends.state.redis_documents import text_digest
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import Unit, UnitKind

# Parses a umeta value. Keys are built inside the scripts from ARGV[1] (the index's
# key prefix) because the provenance sets to update are only known once the old
# value is read; every key shares that prefix, so one index's keys stay together.
_META = """
local function meta_of(value)
  local a = string.find(value, '\\t', 1, true)
  local b = string.find(value, '\\t', a + 1, true)
  local c = string.find(value, '\\t', b + 1, true)
  return string.sub(value, 1, a - 1), string.sub(value, a + 1, b - 1),
    string.sub(value, b + 1, c - 1), string.sub(value, c + 1)
end
"""

# ARGV: base, then (unit id, kind, text digest, record, sources JSON) per unit.
# A re-put of an unchanged text keeps its vector; a changed text must be embedded again.
_PUT_UNITS = _META + """
local base = ARGV[1]
local records, metas, embedded = base .. 'unit', base .. 'umeta', base .. 'embedded'
for i = 2, #ARGV, 5 do
  local id, kind, sig, sources = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 4]
  local old = redis.call('HGET', metas, id)
  local seq, add_sources = nil, true
  if old then
    local old_seq, old_kind, old_sig, old_sources = meta_of(old)
    seq = old_seq
    if old_kind ~= kind then
      redis.call('SREM', base .. 'kind:' .. old_kind, id)
    end
    if old_sig ~= sig then
      redis.call('SREM', embedded, id)
    end
    if old_sources == sources then
      add_sources = false
    else
      for _, doc in ipairs(cjson.decode(old_sources)) do
        redis.call('SREM', base .. 'src:' .. doc, id)
      end
    end
  else
    seq = redis.call('INCR', base .. 'useq')
    redis.call('SREM', embedded, id)
  end
  redis.call('SADD', base .. 'kind:' .. kind, id)
  if add_sources then
    for _, doc in ipairs(cjson.decode(sources)) do
      redis.call('SADD', base .. 'src:' .. doc, id)
    end
  end
  redis.call('HSET', records, id, ARGV[i + 3])
  redis.call('HSET', metas, id, seq .. '\\t' .. kind .. '\\t' .. sig .. '\\t' .. sources)
end
return 0
"""

# ARGV: base, then unit ids.
_DELETE_UNITS = _META + """
local base = ARGV[1]
local records, metas, embedded = base .. 'unit', base .. 'umeta', base .. 'embedded'
for i = 2, #ARGV do
  local id = ARGV[i]
  local old = redis.call('HGET', metas, id)
  if old then
    local _, kind, _, sources = meta_of(old)
    redis.call('SREM', base .. 'kind:' .. kind, id)
    for _, doc in ipairs(cjson.decode(sources)) do
      redis.call('SREM', base .. 'src:' .. doc, id)
    end
    redis.call('HDEL', metas, id)
    redis.call('HDEL', records, id)
  end
  redis.call('SREM', embedded, id)
end
return 0
"""

# ARGV: base, then unit ids. Only stored units are marked: a later first put of an
# id marked while unknown must still be embedded.
_MARK_EMBEDDED = """
local base = ARGV[1]
local metas, embedded = base .. 'umeta', base .. 'embedded'
for i = 2, #ARGV do
  if redis.call('HEXISTS', metas, ARGV[i]) == 1 then
    redis.call('SADD', embedded, ARGV[i])
  end
end
return 0
"""


def _record(unit: Unit) -> str:
    try:
        return dumps([unit.kind.value, unit.text, list(unit.source_doc_ids), unit.method,
                      unit.source_key, list(unit.entities), unit.level, unit.metadata])
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata is not JSON-serialisable: {exc}",
                                where=f"unit {unit.unit_id}") from exc


def _unit(index: str, unit_id: str, record: str) -> Unit:
    kind, text, sources, method, source_key, entities, level, metadata = json.loads(record)
    return Unit(unit_id=unit_id, index=index, kind=UnitKind(kind), text=text,
                source_doc_ids=tuple(sources), method=method, source_key=source_key,
                entities=tuple(entities), level=level, metadata=metadata)


def _flatten(replies: list[Any]) -> list[Any]:
    return [value for reply in replies for value in reply]


class RedisUnitsMixin(RedisConnection):
    def _run_per_unit(self, operation: str, source: str, index: str,
                      args: list[str], stride: int) -> None:
        """Run a per-unit script over ``args`` (``stride`` values per unit), pipelined."""
        script = self._script(source)
        base = self._base(index)

        def add(pipe: Pipeline, chunk: Sequence[str]) -> None:
            script(args=[base, *chunk], client=pipe)

        # Chunks hold whole units: CHUNK units of ``stride`` arguments each.
        self._batched(operation, args, add, size=CHUNK * stride)

    def put_units(self, units: Sequence[Unit]) -> None:
        """Upsert units and their provenance; each chunk of 1000 is one atomic script."""
        by_index: dict[str, list[str]] = {}
        for unit in units:
            by_index.setdefault(unit.index, []).extend((
                unit.unit_id, unit.kind.value, text_digest(unit.text), _record(unit),
                dumps(list(unit.source_doc_ids))))
        for index, args in by_index.items():
            self._run_per_unit("put_units", _PUT_UNITS, index, args, 5)

    def get_units(self, index: str, unit_ids: Sequence[str]) -> list[Unit]:
        """Units in the order asked, each once; unknown ids are skipped."""
        wanted = unique(unit_ids)
        key = self._base(index) + "unit"
        records = _flatten(self._batched("get_units", wanted,
                                         lambda pipe, chunk: pipe.hmget(key, chunk)))
        return [_unit(index, unit_id, record)
                for unit_id, record in zip(wanted, records, strict=True) if record is not None]

    def units_of_documents(self, index: str, doc_ids: Sequence[str],
                           kinds: Sequence[UnitKind] = ()) -> list[Unit]:
        """Units citing any of the documents (optionally only some kinds), in write order."""
        base = self._base(index)
        sets = self._batched("units_of_documents", unique(doc_ids),
                             lambda pipe, chunk: pipe.sunion([base + "src:" + d for d in chunk]))
        ids = sorted({unit_id for members in sets for unit_id in members})

        def add(pipe: Pipeline, chunk: Sequence[str]) -> None:
            pipe.hmget(base + "umeta", chunk)
            pipe.hmget(base + "unit", chunk)

        # Metadata and record of one chunk under one MULTI, so they describe one version.
        replies = self._batched("units_of_documents", ids, add, transaction=True)
        metas = _flatten(replies[0::2])
        records = _flatten(replies[1::2])
        wanted = {UnitKind(k).value for k in kinds}
        found: list[tuple[int, Unit]] = []
        for unit_id, meta, record in zip(ids, metas, records, strict=True):
            if meta is None or record is None:
                continue  # deleted between the provenance read and this one
            seq, kind, _ = meta.split("\t", 2)
            if not wanted or kind in wanted:
                found.append((int(seq), _unit(index, unit_id, record)))
        found.sort(key=lambda pair: pair[0])
        return [unit for _, unit in found]

    def delete_units(self, index: str, unit_ids: Sequence[str]) -> None:
        self._run_per_unit("delete_units", _DELETE_UNITS, index, list(unit_ids), 1)

    def mark_embedded(self, index: str, unit_ids: Sequence[str]) -> None:
        self._run_per_unit("mark_embedded", _MARK_EMBEDDED, index, list(unit_ids), 1)

    def unembedded_units(self, index: str, unit_ids: Sequence[str]) -> list[str]:
        """The given units that are stored and still lack a vector, in the order asked.

        Unknown ids are not returned: there is nothing to embed for them.
        """
        wanted = unique(unit_ids)
        base = self._base(index)

        def add(pipe: Pipeline, chunk: Sequence[str]) -> None:
            pipe.hmget(base + "umeta", chunk)
            pipe.smismember(base + "embedded", list(chunk))

        replies = self._batched("unembedded_units", wanted, add, transaction=True)
        stored = _flatten(replies[0::2])
        embedded = _flatten(replies[1::2])
        return [unit_id for unit_id, meta, done in zip(wanted, stored, embedded, strict=True)
                if meta is not None and not done]

    def count_units(self, index: str) -> dict[UnitKind, int]:
        """Units per kind; kinds with no unit are absent."""
        base = self._base(index)
        kinds = sorted(UnitKind, key=lambda k: k.value)

        def add(pipe: Pipeline, chunk: Sequence[UnitKind]) -> None:
            for kind in chunk:
                pipe.scard(base + "kind:" + kind.value)

        counts = self._batched("count_units", kinds, add, transaction=True)
        return {kind: int(n) for kind, n in zip(kinds, counts, strict=True) if n}
