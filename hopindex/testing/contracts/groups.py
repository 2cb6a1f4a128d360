"""The groups and records part of the ``StateStore`` contract (``GroupStore``,
``RecordStore``).

Mixed into an adapter's test class beside ``StateStoreContract``, which provides
the ``store``, ``index``, ``other`` and ``reopen_store`` fixtures these tests use.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from hopindex.backends.protocols import IndexInfo, StateStore
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import Group
from hopindex.testing.contracts.state_records import doc

BRIDGE = "bridge"
TREE = "raptor.tree"
ANALYSIS = "extractive.analysis"
# Above every adapter's batch size, so reads and deletes span several batches.
MANY = 2500


def record(n: int) -> dict[str, Any]:
    return {"s": [[0, n]], "e": [["Paris", "GPE", 0, 5]], "nested": {"n": n, "ok": True},
            "none": None, "text": "Zürich, 東京"}


class GroupsContract:
    persistent: ClassVar[bool] = False

    # -- groups ------------------------------------------------------------------------------

    def test_replace_returns_the_previous_unit_ids(self, store: StateStore, index: str) -> None:
        """A new group returns []; a replacement returns the ids it replaced and is what
        reads see afterwards."""
        assert store.replace_group(index, BRIDGE, "paris", ["u1", "u2"], ["d1"]) == []
        assert store.replace_group(index, BRIDGE, "paris", ["u3"], ["d2"]) == ["u1", "u2"]
        assert store.get_groups(index, BRIDGE, ["paris"]) == {
            "paris": Group(namespace=BRIDGE, key="paris", unit_ids=("u3",), members=("d2",))}

    def test_replacing_with_no_unit_ids_removes_the_group(self, store: StateStore,
                                                          index: str) -> None:
        """An empty replacement returns the old ids and leaves no trace: not readable, not
        listed, not found from its documents, its namespace gone once empty."""
        store.replace_group(index, BRIDGE, "paris", ["u1"], ["d1", "d2"])
        assert store.replace_group(index, BRIDGE, "paris", [], ["d1"]) == ["u1"]
        assert store.get_groups(index, BRIDGE, ["paris"]) == {}
        assert store.list_group_keys(index, BRIDGE) == []
        assert store.groups_of_documents(index, BRIDGE, ["d1", "d2"]) == set()
        assert store.namespaces_of_groups(index) == []
        assert store.replace_group(index, BRIDGE, "never", [], []) == []
        assert store.list_group_keys(index, BRIDGE) == []

    def test_members_are_sorted_unique_and_lead_back_to_the_group(self, store: StateStore,
                                                                  index: str) -> None:
        """Members come back sorted and once each; any member finds the group, and a
        document dropped from the members no longer does."""
        store.replace_group(index, BRIDGE, "paris", ["u1"], ["d3", "d1", "d3"])
        store.replace_group(index, BRIDGE, "rome", ["u2"], ["d1", "d2"])
        assert store.get_groups(index, BRIDGE, ["paris"])["paris"].members == ("d1", "d3")
        assert store.groups_of_documents(index, BRIDGE, ["d1"]) == {"paris", "rome"}
        assert store.groups_of_documents(index, BRIDGE, ["d3", "missing"]) == {"paris"}
        store.replace_group(index, BRIDGE, "paris", ["u1"], ["d2"])
        assert store.groups_of_documents(index, BRIDGE, ["d3"]) == set()
        assert store.groups_of_documents(index, BRIDGE, ["d2"]) == {"paris", "rome"}
        assert store.groups_of_documents(index, BRIDGE, []) == set()

    def test_a_group_may_have_no_members(self, store: StateStore, index: str) -> None:
        """Unit ids without member documents still make a group."""
        store.replace_group(index, TREE, "root", ["u1"], [])
        assert store.get_groups(index, TREE, ["root"]) == {
            "root": Group(namespace=TREE, key="root", unit_ids=("u1",), members=())}
        assert store.list_group_keys(index, TREE) == ["root"]

    def test_get_groups_in_asked_order_skipping_unknown(self, store: StateStore,
                                                        index: str) -> None:
        """Groups come back keyed in the order asked, each once; unknown keys are absent."""
        for key in ("a", "b", "c"):
            store.replace_group(index, BRIDGE, key, [f"u-{key}"], ["d1"])
        got = store.get_groups(index, BRIDGE, ["c", "missing", "a", "c"])
        assert list(got) == ["c", "a"]
        assert got["c"].unit_ids == ("u-c",)
        assert store.get_groups(index, BRIDGE, []) == {}

    def test_unit_ids_keep_their_order(self, store: StateStore, index: str) -> None:
        """Unit ids are stored as given, not sorted."""
        store.replace_group(index, BRIDGE, "paris", ["u9", "u1", "u5"], ["d1"])
        assert store.get_groups(index, BRIDGE, ["paris"])["paris"].unit_ids == ("u9", "u1", "u5")

    def test_namespaces_are_separate(self, store: StateStore, index: str) -> None:
        """One key in two namespaces is two groups; each namespace lists, finds and removes
        only its own, and the namespaces holding groups are listed sorted."""
        store.replace_group(index, TREE, "paris", ["t1"], ["d2"])
        store.replace_group(index, BRIDGE, "paris", ["b1"], ["d1"])
        store.replace_group(index, BRIDGE, "rome", ["b2"], ["d2"])
        assert store.namespaces_of_groups(index) == [BRIDGE, TREE]
        assert store.get_groups(index, TREE, ["paris"])["paris"].unit_ids == ("t1",)
        assert store.list_group_keys(index, TREE) == ["paris"]
        assert store.groups_of_documents(index, TREE, ["d1", "d2"]) == {"paris"}
        assert store.groups_of_documents(index, BRIDGE, ["d2"]) == {"rome"}
        assert store.replace_group(index, TREE, "paris", [], []) == ["t1"]
        assert store.namespaces_of_groups(index) == [BRIDGE]
        assert store.get_groups(index, BRIDGE, ["paris"])["paris"].unit_ids == ("b1",)

    def test_list_group_keys_is_sorted(self, store: StateStore, index: str) -> None:
        """Keys are listed in code point order, whatever order they were written in."""
        keys = ["rome", "Zagreb", "amsterdam", "b:c", "éclair", "東京", "😀", "1"]
        for key in keys:
            store.replace_group(index, BRIDGE, key, ["u"], [])
        assert store.list_group_keys(index, BRIDGE) == sorted(keys)
        assert store.list_group_keys(index, TREE) == []

    def test_replace_is_idempotent(self, store: StateStore, index: str) -> None:
        """Replacing a group with what it holds returns those ids and changes nothing."""
        store.replace_group(index, BRIDGE, "paris", ["u1", "u2"], ["d2", "d1"])
        before = store.get_groups(index, BRIDGE, ["paris"])
        assert store.replace_group(index, BRIDGE, "paris", ["u1", "u2"], ["d1", "d2"]) == [
            "u1", "u2"]
        assert store.get_groups(index, BRIDGE, ["paris"]) == before
        assert store.groups_of_documents(index, BRIDGE, ["d1"]) == {"paris"}
        assert store.list_group_keys(index, BRIDGE) == ["paris"]

    def test_unicode_and_punctuated_names(self, store: StateStore, index: str) -> None:
        """Keys, namespaces, members and record keys with non-ASCII, ':' and glob
        characters round trip and stay apart from their look-alikes."""
        space, key, member = "méthode:*[x]", "Zürich:*?", "doc:é*[1]"
        store.replace_group(index, space, key, ["ü1"], [member, "東京"])
        store.replace_group(index, "méthode", key, ["other"], ["d1"])
        assert store.get_groups(index, space, [key]) == {
            key: Group(namespace=space, key=key, unit_ids=("ü1",), members=(member, "東京"))}
        assert store.groups_of_documents(index, space, [member]) == {key}
        assert store.groups_of_documents(index, space, ["doc:é"]) == set()
        assert store.namespaces_of_groups(index) == sorted(["méthode", space])
        store.put_records(index, space, {key: record(1), "東京": record(2)})
        assert store.get_records(index, space, [key, "東京"]) == {key: record(1),
                                                                  "東京": record(2)}
        assert store.get_records(index, "méthode", [key]) == {}
        store.delete_records(index, [key])
        assert store.get_records(index, space, [key, "東京"]) == {"東京": record(2)}

    def test_indexes_are_separate_and_go_with_their_index(self, store: StateStore, index: str,
                                                          other: str) -> None:
        """Another index's groups and records are not seen; deleting an index removes its
        groups and records only."""
        for name in (index, other):
            store.replace_group(name, BRIDGE, "paris", [f"{name}-u"], ["d1"])
            store.put_records(name, ANALYSIS, {"d1": record(1)})
        assert store.get_groups(other, BRIDGE, ["paris"])["paris"].unit_ids == (f"{other}-u",)
        store.replace_group(other, BRIDGE, "rome", ["x"], ["d9"])
        assert store.groups_of_documents(index, BRIDGE, ["d9"]) == set()
        store.delete_index(index)
        assert store.get_groups(index, BRIDGE, ["paris"]) == {}
        assert store.list_group_keys(index, BRIDGE) == []
        assert store.groups_of_documents(index, BRIDGE, ["d1"]) == set()
        assert store.namespaces_of_groups(index) == []
        assert store.get_records(index, ANALYSIS, ["d1"]) == {}
        assert store.list_record_namespaces(index) == []
        assert store.list_group_keys(other, BRIDGE) == ["paris", "rome"]
        assert store.groups_of_documents(other, BRIDGE, ["d1"]) == {"paris"}
        assert store.get_records(other, ANALYSIS, ["d1"]) == {"d1": record(1)}

    def test_many_groups_beyond_one_batch(self, store: StateStore, index: str) -> None:
        """Reads over thousands of keys and documents return every match."""
        for i in range(300):
            store.replace_group(index, BRIDGE, f"g{i:04d}", [f"u{i}"], [f"d{i}", "shared"])
        wanted = [f"g{i:04d}" for i in range(300)] + [f"missing{i}" for i in range(MANY)]
        assert list(store.get_groups(index, BRIDGE, wanted)) == wanted[:300]
        docs = [f"d{i}" for i in range(MANY)]
        assert store.groups_of_documents(index, BRIDGE, docs) == set(wanted[:300])
        assert store.groups_of_documents(index, BRIDGE, ["shared"]) == set(wanted[:300])

    # -- records -----------------------------------------------------------------------------

    def test_records_round_trip_in_asked_order(self, store: StateStore, index: str) -> None:
        """Records come back whole (nested, null, non-ASCII, empty objects), keyed in the
        order asked, each once; unknown keys are absent; a second put replaces."""
        store.put_records(index, ANALYSIS, {"d1": record(1), "d2": {}, "d3": record(3)})
        got = store.get_records(index, ANALYSIS, ["d3", "missing", "d2", "d3"])
        assert got == {"d3": record(3), "d2": {}}
        assert list(got) == ["d3", "d2"]
        store.put_records(index, ANALYSIS, {"d1": record(7)})
        assert store.get_records(index, ANALYSIS, ["d1"]) == {"d1": record(7)}
        assert store.get_records(index, ANALYSIS, []) == {}
        store.put_records(index, ANALYSIS, {})

    def test_records_are_per_namespace(self, store: StateStore, index: str) -> None:
        """One key in two namespaces is two records."""
        store.put_records(index, ANALYSIS, {"d1": record(1)})
        store.put_records(index, TREE, {"d1": record(2)})
        assert store.get_records(index, ANALYSIS, ["d1"]) == {"d1": record(1)}
        assert store.get_records(index, TREE, ["d1"]) == {"d1": record(2)}
        assert store.get_records(index, BRIDGE, ["d1"]) == {}

    def test_delete_records_in_one_namespace(self, store: StateStore, index: str) -> None:
        """With a namespace, only that namespace's records under the keys go."""
        store.put_records(index, ANALYSIS, {"d1": record(1), "d2": record(2)})
        store.put_records(index, TREE, {"d1": record(3)})
        store.delete_records(index, ["d1", "missing"], ANALYSIS)
        assert store.get_records(index, ANALYSIS, ["d1", "d2"]) == {"d2": record(2)}
        assert store.get_records(index, TREE, ["d1"]) == {"d1": record(3)}
        store.delete_records(index, [], ANALYSIS)
        store.delete_records(index, ["d1"], "never-written")

    def test_delete_records_in_every_namespace(self, store: StateStore, index: str) -> None:
        """Without a namespace, the keys' records go from every namespace (a deleted
        document's), other keys stay, and a namespace can be written again afterwards."""
        store.put_records(index, ANALYSIS, {"d1": record(1), "d2": record(2)})
        store.put_records(index, TREE, {"d1": record(3)})
        store.put_records(index, BRIDGE, {"d2": record(4)})
        store.delete_records(index, ["d1"])
        assert store.get_records(index, ANALYSIS, ["d1", "d2"]) == {"d2": record(2)}
        assert store.get_records(index, TREE, ["d1"]) == {}
        assert store.get_records(index, BRIDGE, ["d2"]) == {"d2": record(4)}
        store.put_records(index, TREE, {"d1": record(5)})
        assert store.get_records(index, TREE, ["d1"]) == {"d1": record(5)}
        store.delete_records(index, [])

    def test_record_namespaces_are_listed_while_they_hold_a_record(self, store: StateStore,
                                                                   index: str,
                                                                   other: str) -> None:
        """The namespaces holding a record of the index, sorted (unusual names too); one
        whose records are all deleted is no longer listed; other indexes' are not."""
        assert store.list_record_namespaces(index) == []
        store.put_records(index, TREE, {"d1": record(1)})
        store.put_records(index, ANALYSIS, {"d1": record(2), "d2": record(3)})
        store.put_records(index, "méthode:à part", {"d2": record(4)})
        store.put_records(other, BRIDGE, {"d1": record(5)})
        assert store.list_record_namespaces(index) == sorted(
            [ANALYSIS, TREE, "méthode:à part"])
        store.delete_records(index, ["d2"])
        assert store.list_record_namespaces(index) == [ANALYSIS, TREE]
        store.delete_records(index, ["d1"], TREE)
        assert store.list_record_namespaces(index) == [ANALYSIS]
        assert store.list_record_namespaces(other) == [BRIDGE]

    def test_many_records_beyond_one_batch(self, store: StateStore, index: str) -> None:
        """Puts, reads and deletes of thousands of records touch every one."""
        records = {f"d{i}": {"n": i} for i in range(MANY)}
        store.put_records(index, ANALYSIS, records)
        assert store.get_records(index, ANALYSIS, list(records)) == records
        store.delete_records(index, list(records)[: MANY - 1])
        assert store.get_records(index, ANALYSIS, list(records)) == {
            f"d{MANY - 1}": {"n": MANY - 1}}

    def test_deleting_documents_keeps_groups_and_records(self, store: StateStore,
                                                         index: str) -> None:
        """``delete_documents`` leaves records and groups alone: the caller deletes them."""
        store.put_documents([doc(index, "d1")])
        store.put_records(index, ANALYSIS, {"d1": record(1)})
        store.replace_group(index, BRIDGE, "paris", ["u1"], ["d1"])
        store.delete_documents(index, ["d1"])
        assert store.get_records(index, ANALYSIS, ["d1"]) == {"d1": record(1)}
        assert store.groups_of_documents(index, BRIDGE, ["d1"]) == {"paris"}

    def test_bad_namespaces_and_records_are_invalid_input(self, store: StateStore,
                                                          index: str) -> None:
        """An empty namespace, a record that is not an object or not serialisable is
        refused before anything is stored."""
        with pytest.raises(InvalidInputError):
            store.replace_group(index, "", "k", ["u1"], [])
        with pytest.raises(InvalidInputError):
            store.put_records(index, "", {"d1": {}})
        with pytest.raises(InvalidInputError):
            store.delete_records(index, ["d1"], "")
        with pytest.raises(InvalidInputError, match="d2"):
            store.put_records(index, ANALYSIS, {"d1": {}, "d2": [1, 2]})  # type: ignore[dict-item]
        with pytest.raises(InvalidInputError, match="d3"):
            store.put_records(index, ANALYSIS, {"d3": {"when": object()}})
        assert store.get_records(index, ANALYSIS, ["d1", "d2", "d3"]) == {}
        assert store.namespaces_of_groups(index) == []

    def test_groups_and_records_survive_reopen(self, store: StateStore,
                                               reopen_store: Callable[[], StateStore]) -> None:
        """A persistent adapter shows groups and records to a second instance."""
        if not self.persistent:
            pytest.skip("adapter is not persistent")
        # Not the ``index`` fixture: its teardown would use the store closed below.
        name = f"ct-{uuid.uuid4().hex[:12]}"
        store.create_index(IndexInfo(name=name, method="extractive", created_at=time.time()))
        store.replace_group(name, BRIDGE, "paris", ["u1"], ["d1"])
        store.put_records(name, ANALYSIS, {"d1": record(1)})
        store.close()
        again = reopen_store()
        try:
            assert again.get_groups(name, BRIDGE, ["paris"]) == {
                "paris": Group(namespace=BRIDGE, key="paris", unit_ids=("u1",),
                               members=("d1",))}
            assert again.groups_of_documents(name, BRIDGE, ["d1"]) == {"paris"}
            assert again.namespaces_of_groups(name) == [BRIDGE]
            assert again.get_records(name, ANALYSIS, ["d1"]) == {"d1": record(1)}
            assert again.list_record_namespaces(name) == [ANALYSIS]
        finally:
            again.delete_index(name)
            again.close()
