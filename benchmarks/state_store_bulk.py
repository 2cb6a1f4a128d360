"""How fast the state stores move units in bulk: ``put_units`` of 10,000 units into a
fresh store, again (every unit an update), then ``get_units`` of all of them, a few
rounds; SQLite, then Redis (the one at ``--redis-url``, else a private redis-server,
skipped when there is neither).

Target: well under a second for each 10k call on either store (SQLite: one
transaction of executemany; Redis: pipelined, a round trip or so per call). The tests
check those structures themselves (tests/backends/test_sqlite_store.py,
test_redis_state_store.py), not a time, which a busy machine would stretch.

    .venv/bin/python benchmarks/state_store_bulk.py [--units N] [--rounds N] [--redis-url URL]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis
from common import write_result

from hopindex.backends.protocols import StateStore
from hopindex.backends.state import SqliteStateStore
from hopindex.backends.state.redis_store import RedisStateStore
from hopindex.core.errors import BackendUnavailableError
from hopindex.core.ids import unit_id
from hopindex.core.models import Unit, UnitKind
from hopindex.testing.redis_server import running_redis

INDEX = "bulk"


def units(n: int) -> list[Unit]:
    """``n`` passages shaped like the tests' (two source documents, small metadata)."""
    return [Unit(unit_id=unit_id(INDEX, UnitKind.PASSAGE.value, f"k{i}", ""), index=INDEX,
                 kind=UnitKind.PASSAGE, text=f"text of k{i}",
                 source_doc_ids=(f"d{i % 500}", "shared"), method="bench",
                 source_key=f"k{i}", level=1, metadata={"key": f"k{i}", "nested": [1, 2]})
            for i in range(n)]


def timed(call: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of ``call``."""
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


@contextmanager
def sqlite_store() -> Iterator[StateStore]:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStateStore(Path(tmp) / "state.sqlite3")
        try:
            yield store
        finally:
            store.close()


def redis_store(url: str) -> Callable[[], AbstractContextManager[StateStore]]:
    @contextmanager
    def fresh() -> Iterator[StateStore]:
        prefix = f"bench-state-{uuid.uuid4().hex[:12]}"
        store = RedisStateStore(url, prefix=prefix)
        try:
            yield store
        finally:
            store.close()
            # Everything under the prefix, bookkeeping included: the database may be shared.
            client = redis.Redis.from_url(url)
            try:
                for key in client.scan_iter(match=f"{prefix}:*", count=1000):
                    client.unlink(key)
            finally:
                client.close()

    return fresh


def measure(name: str, fresh: Callable[[], AbstractContextManager[StateStore]],
            batch: list[Unit], rounds: int, figures: dict[str, float | int]) -> None:
    """Time insert, update and get of ``batch`` in ``rounds`` fresh stores; print and add
    the figures."""
    ids = [u.unit_id for u in batch]
    runs: dict[str, list[tuple[float, float]]] = {"insert": [], "update": [], "get": []}
    for _ in range(rounds):
        with fresh() as store:
            runs["insert"].append(timed(lambda: store.put_units(batch)))
            runs["update"].append(timed(lambda: store.put_units(batch)))
            runs["get"].append(timed(lambda: store.get_units(INDEX, ids)))
    for kind, measured in runs.items():
        walls = [wall for wall, _ in measured]
        cpus = [cpu for _, cpu in measured]
        wall = statistics.median(walls)
        figures[f"{name}_{kind}_wall_s_median"] = wall
        figures[f"{name}_{kind}_wall_s_max"] = max(walls)
        figures[f"{name}_{kind}_cpu_s_median"] = statistics.median(cpus)
        print(f"{name} {kind} of {len(batch)} units: median {wall:.3f} s wall "
              f"(max {max(walls):.3f} s), {statistics.median(cpus):.3f} s CPU, "
              f"{len(batch) / wall:,.0f} units/s (target: well under 1 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--units", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--redis-url", default=os.environ.get(
        "HOPINDEX_TEST_REDIS_URL", "redis://127.0.0.1:6379/15"))
    args = parser.parse_args()
    batch = units(args.units)
    figures: dict[str, float | int] = {"units": args.units, "rounds": args.rounds}
    measure("sqlite", sqlite_store, batch, args.rounds, figures)
    with ExitStack() as stack:
        try:
            url, _ = stack.enter_context(running_redis(args.redis_url))
        except BackendUnavailableError as exc:
            print(f"redis skipped: {exc}")
        else:
            measure("redis", redis_store(url), batch, args.rounds, figures)
    print(f"wrote {write_result('state_store_bulk', figures)}")


if __name__ == "__main__":
    main()
