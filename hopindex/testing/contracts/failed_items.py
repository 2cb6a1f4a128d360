"""The failed-items part of the ``StateStore`` contract (``FailedItemStore``).

Mixed into ``StateStoreContract``, which provides the ``store``, ``index`` and
``other`` fixtures these tests use.
"""

from __future__ import annotations

from hopindex.backends.protocols import StateStore
from hopindex.core.models import FailedItem


def failed(phase: str, item: str, reason: str = "LLM unavailable", job_id: str = "j1"
           ) -> FailedItem:
    return FailedItem(phase=phase, item=item, reason=reason, job_id=job_id, failed_at=1.5)


class FailedItemsContract:
    def test_failed_items_round_trip_sorted(self, store: StateStore, index: str) -> None:
        """Items come back whole, ordered by phase then item, filterable by phase."""
        items = [failed("stage2", "paris"), failed("stage1", "d2"), failed("stage2", "a:b")]
        store.put_failed_items(index, items)
        assert store.list_failed_items(index) == [items[1], items[2], items[0]]
        assert store.list_failed_items(index, "stage2") == [items[2], items[0]]
        assert store.list_failed_items(index, "stage9") == []

    def test_recording_an_item_again_replaces_it(self, store: StateStore, index: str) -> None:
        """One record per (phase, item): the newest failure's reason and job win."""
        store.put_failed_items(index, [failed("stage2", "paris", "first", "j1")])
        store.put_failed_items(index, [failed("stage2", "paris", "second", "j2")])
        assert store.list_failed_items(index) == [failed("stage2", "paris", "second", "j2")]

    def test_clear_removes_only_the_named_items_of_that_phase(self, store: StateStore,
                                                              index: str) -> None:
        """Clearing is per phase; unknown items and empty lists are no-ops."""
        store.put_failed_items(index, [failed("stage1", "paris"), failed("stage2", "paris"),
                                       failed("stage2", "rome")])
        store.clear_failed_items(index, "stage2", ["paris", "never-failed"])
        store.clear_failed_items(index, "stage2", [])
        assert store.list_failed_items(index) == [failed("stage1", "paris"),
                                                  failed("stage2", "rome")]

    def test_failed_items_are_per_index_and_go_with_it(self, store: StateStore, index: str,
                                                       other: str) -> None:
        """Another index's items are not seen; deleting the index removes its items."""
        store.put_failed_items(index, [failed("stage1", "d1")])
        store.put_failed_items(other, [failed("stage1", "d9")])
        assert store.list_failed_items(other) == [failed("stage1", "d9")]
        store.delete_index(index)
        assert store.list_failed_items(index) == []
        assert store.list_failed_items(other) == [failed("stage1", "d9")]
