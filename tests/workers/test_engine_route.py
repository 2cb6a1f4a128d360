"""Who opens the embedded engines and who reaches them through their owner: the
decisions, without a broker or workers (tests/workers/test_engine_owner.py runs them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hopindex.backends.engine_lock import EnginesOwnedError, held_here
from hopindex.backends.engine_remote import RemoteKeywordIndex, RemoteVectorStore
from hopindex.backends.keyword.tantivy_index import TantivyKeywordIndex
from hopindex.backends.registry import embedded_engine_folders
from hopindex.backends.vector.qdrant_edge import QdrantEdgeVectorStore
from hopindex.core.settings import Settings
from hopindex.workers.engine_route import (
    EngineOwnerMissingError,
    check_engines,
    claim_engines,
    open_process_backends,
    owns_engines,
    routed_folders,
    worker_queues,
)
from hopindex.workers.launch import Pool, choose_pool, worker_argv
from hopindex.workers.queues import ENGINE_QUEUE, Queue
from tests.backends.test_engine_lock import held_elsewhere

# Nothing listens there: every decision below is made without reaching a broker.
BROKER = "redis://127.0.0.1:1/0"
SERVERS = {"vector_url": "qdrant://127.0.0.1:1", "keyword_url": "elasticsearch://127.0.0.1:1"}


def _settings(tmp_path: Path, **overrides: object) -> Settings:
    # Each override is a Settings field of its own type; mypy sees only object.
    return Settings(data_dir=tmp_path, **overrides).resolved()  # type: ignore[arg-type]


def test_the_embed_worker_over_embedded_engines_owns_them(tmp_path: Path) -> None:
    """Only a worker taking embed over embedded engines owns them, takes the engine queue
    and reserves one message per thread; with server engines no one does and the queue
    goes unused."""
    embedded = _settings(tmp_path, broker_url=BROKER)
    servers = _settings(tmp_path, broker_url=BROKER, **SERVERS)
    assert owns_engines(embedded, [Queue.CONTROL, Queue.EMBED])
    assert worker_queues(embedded, [Queue.EMBED]) == ["embed", ENGINE_QUEUE]
    assert worker_queues(embedded, [Queue.STAGE1, Queue.CONTROL]) == ["stage1", "control"]
    argv = worker_argv(embedded, [Queue.EMBED], 4, Pool.AUTO, name="w@h")
    assert argv[argv.index("--prefetch-multiplier") + 1] == "1"  # nothing reserved ahead
    assert not owns_engines(servers, [Queue.EMBED])
    assert worker_queues(servers, [Queue.EMBED]) == ["embed"]
    assert "--prefetch-multiplier" not in worker_argv(servers, [Queue.EMBED], 4, Pool.AUTO)
    assert choose_pool(servers, [Queue.EMBED], Pool.PREFORK) is Pool.PREFORK
    assert embedded_engine_folders(servers) == {}


def test_with_a_broker_everyone_but_the_owner_reaches_the_engines_remotely(
        tmp_path: Path) -> None:
    """Without a broker a process opens the engines itself; with one it gets engines that
    travel to the owner, unless it is the owner (it claimed the folders)."""
    assert routed_folders(_settings(tmp_path)) == {}
    settings = _settings(tmp_path, broker_url=BROKER)
    assert routed_folders(settings) == embedded_engine_folders(settings)
    backends = open_process_backends(settings)
    try:
        assert isinstance(backends.vectors, RemoteVectorStore)
        assert isinstance(backends.keywords, RemoteKeywordIndex)
    finally:
        backends.close()
    claims = claim_engines(settings)
    try:
        assert routed_folders(settings) == {}
        owner = open_process_backends(settings)
        assert isinstance(owner.vectors, QdrantEdgeVectorStore)
        assert isinstance(owner.keywords, TantivyKeywordIndex)
        owner.close()
        assert all(held_here(f) for f in embedded_engine_folders(settings).values())
    finally:
        for claim in claims:
            claim.release()


def test_with_no_owner_running_an_engine_call_fails_at_once(tmp_path: Path) -> None:
    """No live owner record: the call is refused before anything is sent, naming the
    folder and how to start the owner, as a retryable unavailability (503)."""
    settings = _settings(tmp_path, broker_url=BROKER)
    backends = open_process_backends(settings)
    try:
        with pytest.raises(EngineOwnerMissingError) as missing:
            backends.keywords.search_text("idx", "capital", 5)
    finally:
        backends.close()
    message = str(missing.value)
    assert str(tmp_path / "vectors") in message or str(tmp_path / "keyword") in message
    assert "`hopindex worker --queues embed`" in message and missing.value.retryable
    with pytest.raises(EngineOwnerMissingError):
        check_engines(settings, timeout_s=1.0)


def test_a_second_owner_is_refused_and_keeps_no_folder(tmp_path: Path) -> None:
    """The keyword folder held elsewhere: claiming the engines fails naming that process,
    and the vector folder claimed a moment before is given back."""
    settings = _settings(tmp_path, broker_url=BROKER)
    folders = embedded_engine_folders(settings)
    with held_elsewhere(folders["keywords"]) as holder:
        with pytest.raises(EnginesOwnedError, match=f"pid {holder.pid}"):
            claim_engines(settings)
        assert held_here(folders["vectors"]) is None


def test_readiness_without_a_broker_names_the_process_that_holds_the_engines(
        tmp_path: Path) -> None:
    """No broker: ready while this process holds the engines or no one does; not ready,
    naming the holder, while another process holds them (nothing routes to it)."""
    settings = _settings(tmp_path)
    free = check_engines(settings, timeout_s=1.0)
    assert free is not None and free.as_dict() == {"route": "this process", "owner": None}
    with held_elsewhere(embedded_engine_folders(settings)["vectors"]) as holder, \
            pytest.raises(EnginesOwnedError, match=f"pid {holder.pid}"):
        check_engines(settings, timeout_s=1.0)
    claims = claim_engines(settings)
    try:
        mine = check_engines(settings, timeout_s=1.0)
        assert mine is not None and mine.owner is not None
        assert (mine.route, mine.owner["pid"]) == ("this process", os.getpid())
    finally:
        for claim in claims:
            claim.release()
    assert check_engines(_settings(tmp_path, **SERVERS), timeout_s=1.0) is None
