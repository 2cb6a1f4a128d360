"""Method-owned groups and records in Redis (``GroupStore``, ``RecordStore``).

Per index, with ``N`` a namespace as a key part (``key_part``: no ``:`` in it):
``grp:N`` (hash group key → JSON ``[unit ids, members]``), ``grpdoc:N:<doc id>``
(set of the keys of N's groups citing the document), ``grpns`` (set of the ``N``
holding a group), ``rec:N`` (hash record key → the record as JSON) and ``recns``
(set of the ``N`` holding a record, what a delete in every namespace walks).

``replace_group`` is one Lua script: the members to take out of the reverse index
are only known once the old group is read, and a reader must never see a group
whose documents do not lead back to it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from redis.client import Pipeline

from hopindex.backends.state.connection import dumps
from hopindex.backends.state.groups import (
    ANALYSIS_NAMESPACE,
    BRIDGE_NAMESPACE,
    check_namespace,
    decoded_record,
    encoded_records,
    member_list,
)
from hopindex.backends.state.redis_connection import (
    CHUNK,
    RedisConnection,
    chunked,
    key_part,
    text,
    unique,
)
from hopindex.core.models import Group

# ARGV: base, namespace part, group key, the group as JSON ('' removes it), then its
# members. Returns the group it replaced (nil if none).
_REPLACE_GROUP = """
local base, ns, key, record = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local groups, docs = base .. 'grp:' .. ns, base .. 'grpdoc:' .. ns .. ':'
local old = redis.call('HGET', groups, key)
if old then
  for _, doc in ipairs(cjson.decode(old)[2]) do
    redis.call('SREM', docs .. doc, key)
  end
end
if record == '' then
  redis.call('HDEL', groups, key)
  if redis.call('EXISTS', groups) == 0 then
    redis.call('SREM', base .. 'grpns', ns)
  end
else
  redis.call('HSET', groups, key, record)
  for i = 5, #ARGV do
    redis.call('SADD', docs .. ARGV[i], key)
  end
  redis.call('SADD', base .. 'grpns', ns)
end
return old
"""

# ARGV: base, namespace part ('' for every namespace holding records), then keys.
_DELETE_RECORDS = """
local base, only = ARGV[1], ARGV[2]
local spaces = base .. 'recns'
local parts = {only}
if only == '' then
  parts = redis.call('SMEMBERS', spaces)
end
for _, part in ipairs(parts) do
  local hash = base .. 'rec:' .. part
  redis.call('HDEL', hash, unpack(ARGV, 3))
  if redis.call('EXISTS', hash) == 0 then
    redis.call('SREM', spaces, part)
  end
end
return 0
"""


def _group(namespace: str, key: str, value: str) -> Group:
    unit_ids, members = json.loads(value)
    return Group(namespace=namespace, key=key, unit_ids=tuple(unit_ids), members=tuple(members))


class RedisGroupsMixin(RedisConnection):
    def _groups_key(self, index: str, namespace: str) -> str:
        return f"{self._base(index)}grp:{key_part(namespace)}"

    def _records_key(self, index: str, namespace: str) -> str:
        return f"{self._base(index)}rec:{key_part(namespace)}"

    def replace_group(self, index: str, namespace: str, key: str, unit_ids: Sequence[str],
                      members: Sequence[str]) -> list[str]:
        """Record the units the group produced and the documents they cite; return the
        unit ids it had before (``[]`` if new). No unit ids: the group is removed."""
        check_namespace(namespace)
        docs = member_list(members)
        record = dumps([list(unit_ids), docs]) if unit_ids else ""
        with self._errors("replace_group"):
            previous = self._script(_REPLACE_GROUP)(
                args=[self._base(index), key_part(namespace), key, record, *docs])
        ids: list[str] = json.loads(previous)[0] if previous else []
        return ids

    def get_groups(self, index: str, namespace: str, keys: Sequence[str]) -> dict[str, Group]:
        """Key → its group, in the order asked; unknown keys are absent."""
        check_namespace(namespace)
        wanted = unique(keys)
        hash_key = self._groups_key(index, namespace)
        replies = self._batched("get_groups", wanted,
                                lambda pipe, chunk: pipe.hmget(hash_key, chunk))
        values = (value for reply in replies for value in reply)
        return {key: _group(namespace, key, value)
                for key, value in zip(wanted, values, strict=True) if value is not None}

    def list_group_keys(self, index: str, namespace: str) -> list[str]:
        """Every group key of the namespace, sorted."""
        check_namespace(namespace)
        with self._errors("list_group_keys"):
            # HSCAN pages rather than one HKEYS reply; it may repeat a field, the set
            # removes repeats.
            keys = {key for key, _ in self._redis().hscan_iter(
                self._groups_key(index, namespace), count=CHUNK)}
        return sorted(keys)

    def groups_of_documents(self, index: str, namespace: str,
                            doc_ids: Sequence[str]) -> set[str]:
        """Keys of the namespace's groups with any of ``doc_ids`` among their members."""
        check_namespace(namespace)
        prefix = f"{self._base(index)}grpdoc:{key_part(namespace)}:"
        replies = self._batched("groups_of_documents", unique(doc_ids),
                                lambda pipe, chunk: pipe.sunion([prefix + d for d in chunk]))
        return {key for reply in replies for key in reply}

    def namespaces_of_groups(self, index: str) -> list[str]:
        """Namespaces holding at least one group of the index, sorted."""
        with self._errors("namespaces_of_groups"):
            parts = self._redis().smembers(self._base(index) + "grpns")
        # key_part leaves safe names alone and percent-encodes the rest: unquote inverts both.
        return sorted(unquote(part) for part in parts)

    def put_records(self, index: str, namespace: str,
                    records: Mapping[str, dict[str, Any]]) -> None:
        """Upsert the records of one namespace."""
        check_namespace(namespace)
        rows = encoded_records(records)
        hash_key = self._records_key(index, namespace)
        spaces, part = self._base(index) + "recns", key_part(namespace)

        def add(pipe: Pipeline, chunk: Sequence[tuple[str, str]]) -> None:
            pipe.hset(hash_key, mapping=dict(chunk))
            pipe.sadd(spaces, part)

        self._batched("put_records", rows, add, transaction=True)

    def get_records(self, index: str, namespace: str,
                    keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Key → its record, in the order asked; unknown keys are absent."""
        check_namespace(namespace)
        wanted = unique(keys)
        hash_key = self._records_key(index, namespace)
        replies = self._batched("get_records", wanted,
                                lambda pipe, chunk: pipe.hmget(hash_key, chunk))
        values = (value for reply in replies for value in reply)
        return {key: decoded_record(value)
                for key, value in zip(wanted, values, strict=True) if value is not None}

    def delete_records(self, index: str, keys: Sequence[str],
                       namespace: str | None = None) -> None:
        """Forget the records under ``keys``: in ``namespace``, or in every namespace."""
        part = key_part(check_namespace(namespace)) if namespace is not None else ""
        script = self._script(_DELETE_RECORDS)
        base = self._base(index)

        def add(pipe: Pipeline, chunk: Sequence[str]) -> None:
            script(args=[base, part, *chunk], client=pipe)

        self._batched("delete_records", unique(keys), add)

    def list_record_namespaces(self, index: str) -> list[str]:
        """Namespaces holding at least one record of the index, sorted."""
        with self._errors("list_record_namespaces"):
            parts = self._redis().smembers(self._base(index) + "recns")
        return sorted(unquote(part) for part in parts)

    # -- layout upgrade ----------------------------------------------------------------------

    def _copy_legacy_index(self, index: str) -> tuple[int, int]:
        """Copy one index's bridge catalogue and analyses into groups and records.

        Bridges become groups of namespace ``bridge`` whose members are the documents
        their units cite; analyses are copied unchanged into ``extractive.analysis``.
        Returns (groups, records) copied.
        """
        base = self._base(index)
        client = self._redis()
        analyses = base + "analysis"
        records = 0
        if client.exists(analyses):
            target = self._records_key(index, ANALYSIS_NAMESPACE)
            # A server-side copy: analyses may be hundreds of megabytes. The hash
            # already exists only if an interrupted upgrade is being redone; then
            # a record already there is kept.
            if not client.copy(analyses, target):
                for chunk in chunked(list(client.hscan_iter(analyses, count=CHUNK))):
                    with client.pipeline(transaction=False) as pipe:
                        for key, value in chunk:
                            pipe.hsetnx(target, key, value)
                        pipe.execute()
            client.sadd(base + "recns", key_part(ANALYSIS_NAMESPACE))
            records = int(client.hlen(analyses))
        bridges = dict(client.hscan_iter(base + "bridge", count=CHUNK))
        script = self._script(_REPLACE_GROUP)
        part = key_part(BRIDGE_NAMESPACE)
        for chunk in chunked(sorted(bridges)):
            units_of = {entity: json.loads(bridges[entity]) for entity in chunk}
            needed = unique([u for ids in units_of.values() for u in ids])
            metas = client.hmget(base + "umeta", needed) if needed else []
            # umeta is "seq<TAB>kind<TAB>digest<TAB>sources JSON" (redis_units).
            sources = {unit_id: json.loads(str(text(meta)).split("\t", 3)[3])
                       for unit_id, meta in zip(needed, metas, strict=True) if meta}
            with client.pipeline(transaction=False) as pipe:
                for entity, ids in units_of.items():
                    docs = member_list([d for u in ids for d in sources.get(u, ())])
                    record = dumps([ids, docs]) if ids else ""
                    script(args=[base, part, entity, record, *docs], client=pipe)
                pipe.execute()
        return len(bridges), records
