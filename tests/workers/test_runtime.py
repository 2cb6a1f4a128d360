"""A worker process opens its runtime once, however many of its pool's threads start
their first task at the same moment: two runtimes would each open the embedded engines,
and the second could not open the vector shard the first holds."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hopindex.workers import runtime
from hopindex.workers.runtime import Runtime, bind_runtime, current_runtime

THREADS = 4


@pytest.fixture
def unbound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No runtime bound, and the environment a worker process opens one from."""
    monkeypatch.setenv("HOPINDEX_DATA_DIR", str(tmp_path))
    bind_runtime(None)
    yield
    opened = runtime._current
    bind_runtime(None)
    if opened is not None:
        opened.backends.close()


def test_threads_starting_together_share_one_runtime(unbound: None) -> None:
    """Four threads released together each ask for the runtime: one is opened, all get
    it, and its embedded vector store opened (none failed on the shard's lock)."""
    start = threading.Barrier(THREADS)
    got: list[Runtime] = []
    failed: list[BaseException] = []

    def first_task() -> None:
        start.wait()
        try:
            got.append(current_runtime())
        except BaseException as exc:  # reported below, with what the others got
            failed.append(exc)

    pool = [threading.Thread(target=first_task) for _ in range(THREADS)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert not failed
    assert len(got) == THREADS and len({id(r) for r in got}) == 1
    assert got[0].backends.vectors.count_vectors("nothing-here") == 0
