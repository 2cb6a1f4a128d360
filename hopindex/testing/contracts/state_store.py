"""The ``StateStore`` contract: what every state adapter must do, embedded or server.

The entity-catalogue and job tests live in ``state_store_parts`` and are
mixed in here, so an adapter's test module subclasses this one class only.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import ClassVar

import pytest

from hopindex.backends.protocols import IndexInfo, StateStore
from hopindex.core.errors import InvalidIndexNameError, InvalidInputError, NotFoundError
from hopindex.core.models import Document, UnitKind
from hopindex.testing.contracts.failed_items import FailedItemsContract
from hopindex.testing.contracts.state_records import (
    NER,
    TITLE,
    doc,
    ids_of,
    mention,
    new_job,
    unit,
)
from hopindex.testing.contracts.state_store_parts import EntityCatalogueContract, JobStoreContract


class StateStoreContract(EntityCatalogueContract, JobStoreContract, FailedItemsContract):
    """Subclass with a ``store`` fixture; set ``persistent = True`` and provide
    ``reopen_store`` when a second instance over the same location must see the data."""

    persistent: ClassVar[bool] = False

    @pytest.fixture
    def store(self) -> Iterator[StateStore]:
        raise NotImplementedError("the adapter's test class provides the store fixture")

    @pytest.fixture
    def reopen_store(self) -> Callable[[], StateStore]:
        raise NotImplementedError("persistent adapters provide the reopen_store fixture")

    @pytest.fixture
    def index(self, store: StateStore) -> Iterator[str]:
        name = f"ct-{uuid.uuid4().hex[:12]}"
        store.create_index(IndexInfo(name=name, method="extractive", created_at=time.time()))
        yield name
        store.delete_index(name)

    @pytest.fixture
    def other(self, store: StateStore) -> Iterator[str]:
        name = f"ct-{uuid.uuid4().hex[:12]}"
        store.create_index(IndexInfo(name=name, method="naive", created_at=time.time()))
        yield name
        store.delete_index(name)

    # -- lifecycle ---------------------------------------------------------------------------

    def test_has_every_protocol_method(self, store: StateStore) -> None:
        """The adapter offers every public method of the ``StateStore`` protocol."""
        names = [n for n in dir(StateStore) if not n.startswith("_")]
        assert names
        assert all(callable(getattr(store, n)) for n in names)

    def test_data_survives_reopen(self, store: StateStore,
                                  reopen_store: Callable[[], StateStore]) -> None:
        """A persistent adapter shows every kind of record to a second instance."""
        if not self.persistent:
            pytest.skip("adapter is not persistent")
        # Not the ``index`` fixture: its teardown would use the store closed below.
        index = f"ct-{uuid.uuid4().hex[:12]}"
        store.create_index(IndexInfo(name=index, method="extractive", created_at=time.time()))
        job = new_job(index)
        store.put_documents([doc(index, "d1")])
        store.put_units([unit(index, "u1")])
        store.replace_mentions(index, "d1", [mention("paris", "d1")], [NER])
        store.create_job(job)
        store.close()
        again = reopen_store()
        try:
            assert again.get_index(index) is not None
            assert again.get_documents(index, ["d1"]) == [doc(index, "d1")]
            assert again.get_units(index, [unit(index, "u1").unit_id]) == [unit(index, "u1")]
            assert again.mentions_of_entities(index, ["paris"]) == {
                "paris": [mention("paris", "d1")]}
            assert again.get_job(job.job_id) == job
        finally:
            again.delete_index(index)
            again.close()

    # -- index catalog -----------------------------------------------------------------------

    def test_create_index_round_trips(self, store: StateStore) -> None:
        """An index's method, creation time and options come back as stored."""
        name = f"ct-{uuid.uuid4().hex[:12]}"
        info = IndexInfo(name=name, method="indexrag", created_at=123.5, options={"tau": 10})
        try:
            assert store.create_index(info) == info
            assert store.get_index(name) == info
            assert name in [i.name for i in store.list_indexes()]
        finally:
            store.delete_index(name)

    def test_create_index_is_idempotent(self, store: StateStore, index: str) -> None:
        """Creating an existing name returns the stored record and changes nothing."""
        first = store.get_index(index)
        again = store.create_index(IndexInfo(name=index, method="other", created_at=1.0))
        assert again == first
        assert [i.name for i in store.list_indexes()].count(index) == 1

    def test_set_index_options_replaces_them_whole(self, store: StateStore) -> None:
        """Setting options replaces the stored ones (keys left out are gone), keeps the
        method and creation time, shows in get and list, and lasts across reads."""
        name = f"ct-{uuid.uuid4().hex[:12]}"
        store.create_index(IndexInfo(name=name, method="indexrag", created_at=123.5,
                                     options={"tau": 10, "budget": {"max_cost": 1.5}}))
        try:
            updated = store.set_index_options(name, {"budget": {"max_llm_tokens": 5000}})
            expected = IndexInfo(name=name, method="indexrag", created_at=123.5,
                                 options={"budget": {"max_llm_tokens": 5000}})
            assert updated == expected
            assert store.get_index(name) == expected
            assert [i for i in store.list_indexes() if i.name == name] == [expected]
            assert store.set_index_options(name, {}).options == {}
            assert store.get_index(name) == IndexInfo(name=name, method="indexrag",
                                                      created_at=123.5)
        finally:
            store.delete_index(name)

    def test_set_index_options_of_an_unknown_index_is_not_found(
            self, store: StateStore, index: str) -> None:
        """Options of an index that does not exist (or was deleted) are refused with
        NotFoundError and create no index; unstorable options are refused as input."""
        with pytest.raises(NotFoundError):
            store.set_index_options("ct-never-created", {"budget": {"max_cost": 1.0}})
        assert store.get_index("ct-never-created") is None
        gone = f"ct-{uuid.uuid4().hex[:12]}"
        store.create_index(IndexInfo(name=gone, method="naive", created_at=1.0))
        store.delete_index(gone)
        with pytest.raises(NotFoundError):
            store.set_index_options(gone, {})
        assert store.get_index(gone) is None
        with pytest.raises(InvalidInputError):
            store.set_index_options(index, {"bad": object()})
        kept = store.get_index(index)
        assert kept is not None and kept.options == {}

    def test_unknown_index_is_none(self, store: StateStore) -> None:
        """Looking up an index that was never created returns None."""
        assert store.get_index("ct-never-created") is None

    def test_create_index_rejects_unsafe_names(self, store: StateStore) -> None:
        """Names outside the safe pattern are refused before anything is stored."""
        with pytest.raises(InvalidIndexNameError):
            store.create_index(IndexInfo(name="Bad Name/..", method="naive", created_at=0.0))

    def test_delete_index_removes_everything_of_that_index_only(
            self, store: StateStore, index: str, other: str) -> None:
        """Deleting an index empties its documents, units, mentions and jobs (its groups
        and records: the groups contract)."""
        jobs = {}
        for name in (index, other):
            store.put_documents([doc(name, "d1")])
            store.put_units([unit(name, "u1"), unit(name, "u2", kind=UnitKind.BRIDGE)])
            store.replace_mentions(name, "d1", [mention("paris", "d1"),
                                                mention("paris", "d1", TITLE)], [NER, TITLE])
            jobs[name] = new_job(name)
            store.create_job(jobs[name])
        store.delete_index(index)
        assert store.get_index(index) is None
        assert store.get_documents(index, ["d1"]) == []
        assert store.document_hashes(index) == {}
        assert store.get_units(index, [unit(index, "u1").unit_id]) == []
        assert store.units_of_documents(index, ["d1"]) == []
        assert store.count_units(index) == {}
        assert store.mentions_of_entities(index, ["paris"]) == {}
        assert store.mentions_of_documents(index, ["d1"]) == {}
        assert store.title_lexicon(index) == {}
        assert store.get_job(jobs[index].job_id) is None
        assert store.list_jobs(index) == []
        # The other index is untouched.
        assert store.get_index(other) is not None
        assert len(store.get_documents(other, ["d1"])) == 1
        assert store.count_units(other) == {UnitKind.PASSAGE: 1, UnitKind.BRIDGE: 1}
        assert store.title_lexicon(other) == {"paris": ["d1"]}
        assert store.get_job(jobs[other].job_id) == jobs[other]

    def test_delete_unknown_index_is_a_no_op(self, store: StateStore) -> None:
        """Deleting a name that does not exist raises nothing."""
        store.delete_index("ct-never-created")

    # -- documents ---------------------------------------------------------------------------

    def test_documents_round_trip_in_asked_order(self, store: StateStore, index: str) -> None:
        """Documents come back whole, in the order asked, once each, skipping unknown ids."""
        docs = [doc(index, f"d{i}", text=f"text {i}") for i in range(3)]
        store.put_documents(docs)
        got = store.get_documents(index, ["d2", "missing", "d0", "d2"])
        assert got == [docs[2], docs[0]]
        assert store.get_documents(index, []) == []

    def test_put_documents_upserts(self, store: StateStore, index: str) -> None:
        """A second put of a doc id replaces its title, text, hash and metadata."""
        store.put_documents([doc(index, "d1")])
        changed = doc(index, "d1", text="Berlin is in Germany.", title="Berlin")
        store.put_documents([changed])
        assert store.get_documents(index, ["d1"]) == [changed]
        assert store.document_hashes(index) == {"d1": changed.content_hash}

    def test_document_hashes_are_per_index(self, store: StateStore, index: str,
                                           other: str) -> None:
        """``document_hashes`` maps each doc id of that index only to its content hash."""
        a, b = doc(index, "d1"), doc(index, "d2", text="Other text.")
        store.put_documents([a, b, doc(other, "d9")])
        assert store.document_hashes(index) == {"d1": a.content_hash, "d2": b.content_hash}
        assert store.get_documents(other, ["d1"]) == []

    def test_delete_documents_removes_them(self, store: StateStore, index: str) -> None:
        """Deleted documents are gone, from reads and hashes; the others remain."""
        store.put_documents([doc(index, "d1"), doc(index, "d2")])
        store.delete_documents(index, ["d1", "missing"])
        assert [d.doc_id for d in store.get_documents(index, ["d1", "d2"])] == ["d2"]
        assert list(store.document_hashes(index)) == ["d2"]
        store.delete_documents(index, [])

    def test_unserialisable_metadata_is_invalid_input(self, store: StateStore,
                                                      index: str) -> None:
        """Metadata that JSON cannot hold is refused naming the document."""
        bad = Document(doc_id="d1", index=index, title="t", text="x", content_hash="h",
                       metadata={"when": object()})
        with pytest.raises(InvalidInputError, match="d1"):
            store.put_documents([bad])

    # -- units -------------------------------------------------------------------------------

    def test_units_round_trip_in_asked_order(self, store: StateStore, index: str) -> None:
        """Every unit field comes back; order follows the ids asked, unknown ids skipped."""
        units = [unit(index, f"k{i}", docs=("d1", f"d{i + 2}"), entities=("paris", f"e{i}"))
                 for i in range(4)]
        store.put_units(units)
        asked = [units[3].unit_id, "missing", units[0].unit_id, units[3].unit_id]
        assert store.get_units(index, asked) == [units[3], units[0]]
        assert store.get_units(index, []) == []

    def test_units_of_documents_matches_any_source(self, store: StateStore, index: str) -> None:
        """A unit is found through any of its source documents, optionally by kind."""
        a = unit(index, "a", docs=("d1",))
        b = unit(index, "b", kind=UnitKind.BRIDGE, docs=("d1", "d2"))
        c = unit(index, "c", kind=UnitKind.AKU, docs=("d3",))
        store.put_units([a, b, c])
        assert set(ids_of(store.units_of_documents(index, ["d2"]))) == {b.unit_id}
        found = store.units_of_documents(index, ["d1", "d3"])
        assert sorted(ids_of(found)) == sorted([a.unit_id, b.unit_id, c.unit_id])
        assert len(found) == 3
        only = store.units_of_documents(index, ["d1", "d3"], kinds=[UnitKind.BRIDGE,
                                                                   UnitKind.AKU])
        assert set(ids_of(only)) == {b.unit_id, c.unit_id}
        assert store.units_of_documents(index, ["nope"]) == []
        assert store.units_of_documents(index, []) == []

    def test_unit_update_replaces_provenance(self, store: StateStore, index: str) -> None:
        """A unit re-put with fewer sources is no longer found under the dropped one."""
        store.put_units([unit(index, "a", docs=("d1", "d2"))])
        store.put_units([unit(index, "a", docs=("d2",))])
        assert store.units_of_documents(index, ["d1"]) == []
        assert ids_of(store.units_of_documents(index, ["d2"])) == [unit(index, "a").unit_id]

    def test_delete_units(self, store: StateStore, index: str) -> None:
        """Deleted units vanish from reads, provenance lookups and counts."""
        a, b = unit(index, "a"), unit(index, "b")
        store.put_units([a, b])
        store.delete_units(index, [a.unit_id, "missing"])
        assert store.get_units(index, [a.unit_id, b.unit_id]) == [b]
        assert ids_of(store.units_of_documents(index, ["d1"])) == [b.unit_id]
        assert store.count_units(index) == {UnitKind.PASSAGE: 1}
        store.delete_units(index, [])

    def test_embedded_flag_follows_text(self, store: StateStore, index: str) -> None:
        """New units need embedding; marking clears it; same text keeps it; new text resets it."""
        a, b = unit(index, "a"), unit(index, "b")
        store.put_units([a, b])
        asked = [b.unit_id, a.unit_id, "missing"]
        assert store.unembedded_units(index, asked) == [b.unit_id, a.unit_id]
        store.mark_embedded(index, [a.unit_id, b.unit_id])
        assert store.unembedded_units(index, asked) == []
        store.put_units([a, unit(index, "b", text="a rewritten text")])
        assert store.unembedded_units(index, asked) == [b.unit_id]
        assert store.unembedded_units(index, []) == []

    def test_count_units_per_kind(self, store: StateStore, index: str, other: str) -> None:
        """Counts are per kind and per index; an empty index counts nothing."""
        assert store.count_units(index) == {}
        store.put_units([unit(index, "a"), unit(index, "b"),
                         unit(index, "c", kind=UnitKind.BRIDGE), unit(other, "a")])
        store.put_units([unit(index, "a")])
        assert store.count_units(index) == {UnitKind.PASSAGE: 2, UnitKind.BRIDGE: 1}

    def test_bulk_put_units(self, store: StateStore, index: str) -> None:
        """Thousands of units in one call are all stored and findable by document."""
        units = [unit(index, f"k{i}", docs=(f"d{i % 50}",)) for i in range(5000)]
        store.put_units(units)
        assert store.count_units(index) == {UnitKind.PASSAGE: 5000}
        assert len(store.units_of_documents(index, ["d7"])) == 100
        assert len(store.get_units(index, [u.unit_id for u in units])) == 5000
