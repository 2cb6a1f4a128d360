"""Redis memory by key family: every key SCANned, ``MEMORY USAGE`` of each, summed per
family (the key with its ids taken out).

Families: the state store's keys (``hopindex:…``; those of an index ``hopindex:ix:I:…``,
named by the part after the index: documents, units, mentions, groups, records, …),
job records and fan-out records, the event log, Celery's result and chord keys, kombu's
queues and its unacknowledged-message hash. ``MEMORY USAGE … SAMPLES 0`` counts every
element of a collection (the default samples five, which misjudges the skewed sizes of
a mentions hash or a fan-out list).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import redis
from task_log import PREFIX as BENCH_PREFIX

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HEX = re.compile(r"\b[0-9a-f]{12,}\b")
_NUMBER = re.compile(r"\b\d+\b")
_SCAN_COUNT = 1000
_PIPELINE = 500


def family(key: str) -> str:
    """``key`` with its ids, index name and entity or document names replaced by ``*``."""
    parts = key.split(":")
    if parts[0] == "hopindex" and len(parts) > 1:
        if parts[1] == "ix" and len(parts) > 3:
            # hopindex:ix:<index>:<family>[:<id or name>…]
            return ":".join(["hopindex", "ix", "*", parts[3], *(["*"] if len(parts) > 4 else [])])
        return ":".join(["hopindex", parts[1], *(["*"] if len(parts) > 2 else [])])
    key = _UUID.sub("*", key)
    key = _HEX.sub("*", key)
    return _NUMBER.sub("*", key)


def _keys(client: redis.Redis) -> Iterator[str]:
    for raw in client.scan_iter(count=_SCAN_COUNT):
        key = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        if not key.startswith(BENCH_PREFIX):
            yield key


def by_family(client: redis.Redis) -> dict[str, dict[str, int]]:
    """Family → {keys, bytes}, largest first."""
    totals: dict[str, dict[str, int]] = defaultdict(lambda: {"keys": 0, "bytes": 0})
    batch: list[str] = []

    def flush() -> None:
        with client.pipeline(transaction=False) as pipe:
            for key in batch:
                pipe.memory_usage(key, samples=0)
            sizes: list[Any] = pipe.execute()
        for key, size in zip(batch, sizes, strict=True):
            if size is None:  # expired or deleted since the scan
                continue
            entry = totals[family(key)]
            entry["keys"] += 1
            entry["bytes"] += int(size)
        batch.clear()

    for key in _keys(client):
        batch.append(key)
        if len(batch) >= _PIPELINE:
            flush()
    if batch:
        flush()
    return dict(sorted(totals.items(), key=lambda item: -item[1]["bytes"]))


def per_document(families: dict[str, dict[str, int]], documents: int) -> dict[str, Any]:
    """Each family's bytes per document, and the total."""
    total = sum(f["bytes"] for f in families.values())
    return {"bytes_per_document": round(total / documents, 1),
            "keys": sum(f["keys"] for f in families.values()),
            "families": {name: {**f, "bytes_per_document": round(f["bytes"] / documents, 1)}
                         for name, f in families.items()}}


def used_memory(client: redis.Redis) -> dict[str, int]:
    info: dict[str, Any] = client.info("memory")
    return {"used_memory": int(info["used_memory"]),
            "used_memory_peak": int(info["used_memory_peak"])}


def net_stats(client: redis.Redis) -> dict[str, int]:
    info: dict[str, Any] = client.info("stats")
    return {"net_input_bytes": int(info["total_net_input_bytes"]),
            "net_output_bytes": int(info["total_net_output_bytes"]),
            "commands": int(info["total_commands_processed"])}
