"""The owner lock of the embedded engines' folders: one process holds a folder, the
others are told who (and what to do instead), and a dead owner leaves it free."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hopindex.backends.engine_lock import (
    LOCK_FILE,
    EnginesOwnedError,
    OwnerRole,
    claim_folder,
    find_owner,
    held_here,
)
from hopindex.backends.keyword.tantivy_index import TantivyKeywordIndex
from hopindex.backends.vector.qdrant_edge import QdrantEdgeVectorStore

# Claims the folder given as argv[1] with the engine adapter named by argv[2] (or the
# bare lock), says so, and holds it until killed.
_HOLDER = """
import sys, time
from pathlib import Path
from hopindex.backends.engine_lock import OwnerRole, claim_folder
from hopindex.backends.keyword.tantivy_index import TantivyKeywordIndex
from hopindex.backends.vector.qdrant_edge import QdrantEdgeVectorStore
folder, how = Path(sys.argv[1]), sys.argv[2]
if how == "vectors":
    QdrantEdgeVectorStore(folder)
elif how == "keywords":
    TantivyKeywordIndex(folder)
else:
    claim_folder(folder, "tantivy", OwnerRole.ENGINE_OWNER)
print("held", flush=True)
time.sleep(600)  # holds the folder until the test kills it: not a wait for anything
"""


@contextmanager
def held_elsewhere(folder: Path, how: str = "lock") -> Iterator[subprocess.Popen[str]]:
    """Another process holding ``folder``; SIGKILLed on the way out."""
    process = subprocess.Popen([sys.executable, "-c", _HOLDER, str(folder), how],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        for line in process.stdout:  # log lines may come first
            if line.strip() == "held":
                break
        else:
            raise AssertionError("the holder exited before holding the folder")
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_claim_records_this_process_and_release_clears_it(tmp_path: Path) -> None:
    """The record names this pid, host and command with its role and start; released,
    the folder has no owner and the record is empty."""
    claim = claim_folder(tmp_path / "vectors", "Qdrant Edge", OwnerRole.ENGINE_OWNER)
    owner = find_owner(tmp_path / "vectors")
    assert owner is not None and owner == held_here(tmp_path / "vectors")
    assert (owner.pid, owner.host, owner.role) == (os.getpid(), socket.gethostname(),
                                                     OwnerRole.ENGINE_OWNER.value)
    recorded = json.loads((tmp_path / "vectors" / LOCK_FILE).read_text())
    assert recorded == owner.as_dict() and recorded["since"].endswith("+00:00")
    claim.release()
    claim.release()  # idempotent
    assert find_owner(tmp_path / "vectors") is None
    assert (tmp_path / "vectors" / LOCK_FILE).read_text() == ""


def test_claims_within_a_process_are_counted(tmp_path: Path) -> None:
    """The worker's start-up claim and its adapters' claims share the folder; it is free
    only once every claim is released."""
    first = claim_folder(tmp_path, "tantivy")
    second = claim_folder(tmp_path / ".", "tantivy")  # the same folder, spelled otherwise
    first.release()
    assert held_here(tmp_path) is not None
    second.release()
    assert held_here(tmp_path) is None


def test_another_process_is_refused_with_the_owner_and_the_ways_out(tmp_path: Path) -> None:
    """While another process holds the folder, a claim here fails naming that process
    (pid, host, command, role, since) and both ways out; ``find_owner`` reads the same
    record without taking any lock."""
    with held_elsewhere(tmp_path) as holder:
        with pytest.raises(EnginesOwnedError) as refused:
            claim_folder(tmp_path, "tantivy")
        message = str(refused.value)
        assert f"pid {holder.pid} on {socket.gethostname()}" in message
        assert OwnerRole.ENGINE_OWNER.value in message and "since 20" in message
        for way_out in ("HOPINDEX_BROKER_URL", "`hopindex worker --queues embed`",
                        "HOPINDEX_VECTOR_URL=qdrant://", "HOPINDEX_KEYWORD_URL=elasticsearch://"):
            assert way_out in message, way_out
        assert refused.value.owner is not None and refused.value.owner.pid == holder.pid
        assert not refused.value.retryable
        found = find_owner(tmp_path)
        assert found is not None and found.pid == holder.pid
        assert held_here(tmp_path) is None


def test_a_killed_owner_leaves_the_folder_free(tmp_path: Path) -> None:
    """SIGKILL leaves no chance to clean up: the kernel drops the lock, the record's pid
    is dead, so nobody is reported as owner and the next claim succeeds."""
    with held_elsewhere(tmp_path) as holder:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == holder.pid
    assert find_owner(tmp_path) is None
    claim_folder(tmp_path, "tantivy").release()


@pytest.mark.parametrize("how", ["vectors", "keywords"])
def test_each_embedded_engine_claims_its_folder(tmp_path: Path, how: str) -> None:
    """Opening Qdrant Edge or tantivy over a folder another process's engine holds fails
    with the owner's name at once, not with the engine's WouldBlock at a first search;
    closing the engine here frees the folder for the next process."""
    folder = tmp_path / how
    opener = QdrantEdgeVectorStore if how == "vectors" else TantivyKeywordIndex
    with held_elsewhere(folder, how) as holder, pytest.raises(EnginesOwnedError,
                                                              match=f"pid {holder.pid}"):
        opener(folder)
    engine = opener(folder)
    assert held_here(folder) is not None
    engine.close()
    assert held_here(folder) is None
