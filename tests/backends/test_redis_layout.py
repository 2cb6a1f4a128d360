"""The Redis state store's key layout: the version stamp and the upgrades opening runs."""

from __future__ import annotations

import json
import threading
import time

import pytest
import redis

from hopindex.backends.protocols import IndexInfo
from hopindex.backends.state.connection import dumps
from hopindex.backends.state.redis_store import LAYOUT_VERSION, RedisStateStore
from hopindex.core.errors import BackendError
from hopindex.core.models import FailedItem, Group, UnitKind
from hopindex.methods.extractive.analyses import decode_analysis
from hopindex.testing.contracts.state_records import analysis, unit
from tests.backends.layout_records import encoded_analysis
from tests.redis_server import redis_url  # noqa: F401  # pytest fixture

pytestmark = pytest.mark.integration


@pytest.fixture
def store(redis_store: RedisStateStore) -> RedisStateStore:
    return redis_store


# -- layout 1: groups and records ----------------------------------------------------------


def _bridge_id(name: str, key: str) -> str:
    return unit(name, key, kind=UnitKind.BRIDGE).unit_id


def _legacy_index(store: RedisStateStore, name: str) -> None:
    """An index as the layout before groups left it: bridges, units, analyses."""
    store.create_index(IndexInfo(name=name, method="extractive", created_at=time.time()))
    store.put_units([unit(name, "b1", kind=UnitKind.BRIDGE, docs=("d2", "é1")),
                     unit(name, "b2", kind=UnitKind.BRIDGE, docs=("z9", "d2", "d1"))])
    # Written as that layout held them: hash entity → unit ids, hash doc id → analysis.
    base, client = store._base(name), store._redis()
    client.hset(base + "bridge", mapping={
        "paris": dumps([_bridge_id(name, "b2"), _bridge_id(name, "b1")]),
        "ghost": dumps(["gone"])})
    client.hset(base + "analysis", mapping={"d1": encoded_analysis(analysis(1)),
                                            "d:2*": encoded_analysis(analysis(2))})


def _to_old_layout(raw: redis.Redis, prefix: str) -> None:
    """Forget the layout version, as a database written before it existed."""
    raw.delete(f"{prefix}:layout")


def test_upgrade_copies_bridges_and_analyses(store: RedisStateStore, raw: redis.Redis,
                                             redis_url: str,  # noqa: F811  # the imported fixture
                                             prefix: str) -> None:
    """Opening a database at the old layout moves each bridge into a "bridge" group whose
    members are the sorted union of its units' documents, and each analysis, unchanged,
    into an "extractive.analysis" record that still decodes to the same TextAnalysis."""
    names = ["wiki", "other-1"]
    for name in names:
        _legacy_index(store, name)
    _to_old_layout(raw, prefix)
    again = RedisStateStore(redis_url, prefix=prefix)
    try:
        for name in names:
            b1, b2 = _bridge_id(name, "b1"), _bridge_id(name, "b2")
            assert again.get_groups(name, "bridge", ["paris", "ghost"]) == {
                "paris": Group(namespace="bridge", key="paris", unit_ids=(b2, b1),
                               members=("d1", "d2", "z9", "é1")),
                "ghost": Group(namespace="bridge", key="ghost", unit_ids=("gone",),
                               members=())}
            assert again.groups_of_documents(name, "bridge", ["é1"]) == {"paris"}
            assert again.namespaces_of_groups(name) == ["bridge"]
            copied = again.get_records(name, "extractive.analysis", ["d1", "d:2*"])
            assert copied == {"d1": json.loads(encoded_analysis(analysis(1))),
                              "d:2*": json.loads(encoded_analysis(analysis(2)))}
            assert decode_analysis(copied["d1"]) == analysis(1)
            # The old keys are left as they were (a later upgrade drops them).
            base = again._base(name)
            assert json.loads(str(raw.hget(base + "bridge", "paris"))) == [b2, b1]
            assert raw.hget(base + "analysis", "d1") == encoded_analysis(analysis(1))
        assert raw.get(f"{prefix}:layout") == str(LAYOUT_VERSION)
        assert raw.get(f"{prefix}:layoutlease") is None
    finally:
        again.close()


def test_upgrade_runs_once(store: RedisStateStore, raw: redis.Redis,
                           redis_url: str,  # noqa: F811  # the imported fixture
                           prefix: str) -> None:
    """Once upgraded, reopening copies nothing again: a group removed since stays removed."""
    _legacy_index(store, "wiki")
    _to_old_layout(raw, prefix)
    RedisStateStore(redis_url, prefix=prefix).close()
    store.replace_group("wiki", "bridge", "paris", [], [])
    store.delete_records("wiki", ["d1"])
    RedisStateStore(redis_url, prefix=prefix).close()
    assert store.list_group_keys("wiki", "bridge") == ["ghost"]
    assert store.get_records("wiki", "extractive.analysis", ["d1"]) == {}


def test_upgrade_keeps_records_already_in_place(store: RedisStateStore, raw: redis.Redis,
                                                redis_url: str,  # noqa: F811  # the imported fixture
                                                prefix: str) -> None:
    """An upgrade redone after an interrupted one keeps the records already there and
    adds the missing ones."""
    _legacy_index(store, "wiki")
    store.put_records("wiki", "extractive.analysis", {"d1": {"kept": True}})
    _to_old_layout(raw, prefix)
    RedisStateStore(redis_url, prefix=prefix).close()
    assert store.get_records("wiki", "extractive.analysis", ["d1", "d:2*"]) == {
        "d1": {"kept": True}, "d:2*": json.loads(encoded_analysis(analysis(2)))}


def test_opener_waits_for_an_upgrade_in_progress(store: RedisStateStore, raw: redis.Redis,
                                                 redis_url: str,  # noqa: F811  # the imported fixture
                                                 prefix: str) -> None:
    """While another opener holds the upgrade lease, a second waits, then upgrades once
    the lease runs out."""
    _legacy_index(store, "wiki")
    _to_old_layout(raw, prefix)
    # Timed from before the lease is set: Redis expires it 0.3 s after the SET reached
    # it, which is after ``started`` however long this thread then waits for a CPU,
    # and the opener upgrades only once it is gone. So at least 0.3 s pass, less Redis's
    # rounding to whole ms; an opener that did not wait would take milliseconds.
    started = time.perf_counter()
    raw.set(f"{prefix}:layoutlease", "other-opener", px=300)
    RedisStateStore(redis_url, prefix=prefix).close()
    assert time.perf_counter() - started >= 0.29
    assert store.list_group_keys("wiki", "bridge") == ["ghost", "paris"]


def test_concurrent_openers_upgrade_once(store: RedisStateStore, raw: redis.Redis,
                                         redis_url: str,  # noqa: F811  # the imported fixture
                                         prefix: str) -> None:
    """Several stores opened at once over an old layout all open, and the data is whole."""
    _legacy_index(store, "wiki")
    _to_old_layout(raw, prefix)
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            RedisStateStore(redis_url, prefix=prefix).close()
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.groups_of_documents("wiki", "bridge", ["d1"]) == {"paris"}
    assert len(store.get_records("wiki", "extractive.analysis", ["d1", "d:2*"])) == 2


def test_refuses_a_newer_layout(store: RedisStateStore, raw: redis.Redis,
                                redis_url: str,  # noqa: F811  # the imported fixture
                                prefix: str) -> None:
    """A database laid out by a newer hopindex is refused instead of misread."""
    raw.set(f"{prefix}:layout", LAYOUT_VERSION + 1)
    with pytest.raises(BackendError, match="newer"):
        RedisStateStore(redis_url, prefix=prefix)


# -- layout 2: qualified failed-item phases --------------------------------------------------


def _failed(phase: str, item: str, reason: str = "LLM unavailable") -> FailedItem:
    return FailedItem(phase=phase, item=item, reason=reason, job_id="j0", failed_at=1.5)


def _legacy_failed_items(store: RedisStateStore) -> None:
    """Bare "stage1"/"stage2" items (``put_failed_items`` writes them as the releases
    before qualified phase names did) of an extractive index, an indexrag index and an
    index no longer in the catalogue."""
    for name, method in (("wiki", "extractive"), ("news", "indexrag")):
        store.create_index(IndexInfo(name=name, method=method, created_at=time.time()))
    for name in ("wiki", "news", "gone"):
        store.put_failed_items(name, [_failed("stage1", "d1"), _failed("stage2", "a:b"),
                                      _failed("purge", "u1")])
    # Recorded again under the new name after an upgraded job failed it once more.
    store.put_failed_items("news", [_failed("indexrag.stage1", "d1", "newer failure")])


@pytest.mark.parametrize("layout", [0, 1])
def test_upgrade_qualifies_failed_item_phases(store: RedisStateStore, raw: redis.Redis,
                                              redis_url: str,  # noqa: F811  # the imported fixture
                                              prefix: str, layout: int) -> None:
    """Opening a database from before qualified phase names renames each catalogued
    index's "stage1" and "stage2" items to "<method>.stage1"/"<method>.stage2" (field and
    record), keeps an item already under the new name and leaves "purge" alone. An index
    missing from the catalogue is not visited: its keys go when its deletion is redone.
    A second open changes nothing."""
    _legacy_failed_items(store)
    orphan = raw.hgetall(store._base("gone") + "failed")
    raw.set(f"{prefix}:layout", layout)
    again = RedisStateStore(redis_url, prefix=prefix)
    try:
        assert again.list_failed_items("wiki") == [
            _failed("extractive.stage1", "d1"), _failed("extractive.stage2", "a:b"),
            _failed("purge", "u1")]
        assert again.list_failed_items("news") == [
            _failed("indexrag.stage1", "d1", "newer failure"),
            _failed("indexrag.stage2", "a:b"), _failed("purge", "u1")]
        assert sorted(raw.hkeys(again._base("wiki") + "failed")) == [
            "extractive.stage1:d1", "extractive.stage2:a:b", "purge:u1"]
        assert raw.hgetall(again._base("gone") + "failed") == orphan
        assert raw.get(f"{prefix}:layout") == str(LAYOUT_VERSION)
        assert raw.get(f"{prefix}:layoutlease") is None
        # Clearing under the new name reaches the upgraded item.
        again.clear_failed_items("wiki", "extractive.stage2", ["a:b"])
        # A bare name written now would be renamed by an upgrade run twice.
        again.put_failed_items("wiki", [_failed("stage2", "probe")])
        before = again.list_failed_items("wiki") + again.list_failed_items("news")
    finally:
        again.close()
    RedisStateStore(redis_url, prefix=prefix).close()
    assert store.list_failed_items("wiki") + store.list_failed_items("news") == before
    assert _failed("stage2", "probe") in before


def test_upgrade_from_layout_1_copies_no_groups_again(store: RedisStateStore,
                                                      raw: redis.Redis,
                                                      redis_url: str,  # noqa: F811  # the imported fixture
                                                      prefix: str) -> None:
    """A database already at layout 1 only has its failed items renamed: the old bridge
    catalogue left beside the groups is not copied into them again."""
    _legacy_index(store, "wiki")
    store.put_failed_items("wiki", [_failed("stage2", "paris")])
    raw.set(f"{prefix}:layout", 1)
    RedisStateStore(redis_url, prefix=prefix).close()
    assert store.list_group_keys("wiki", "bridge") == []
    assert store.list_failed_items("wiki") == [_failed("extractive.stage2", "paris")]
