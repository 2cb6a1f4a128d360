"""The index method contract: what any ``IndexMethod`` guarantees about the units it writes.

The method is driven the way a user drives it, through ``Client.local`` (the service
in this process, tasks run eagerly), over data directories fresh for each test. The test
class provides ``index_case``: the method's name, a small corpus (two documents at
least, sharing entities so that groups form) and the settings it needs (an LLM's URL).

What the tests hold a method to:

- unit ids are a function of the documents: two fresh builds agree on every unit;
- re-ingesting unchanged documents, or repairing a complete index, runs no phase item,
  embeds nothing and changes nothing;
- a changed document changes only the units that cite it and the groups it belongs
  to (before or after); every other unit keeps its id and text, and only what is new
  or rewritten is embedded;
- a deleted document leaves no unit citing it and no group listing it.

After every job the engines hold exactly the index's units: no vector or posting is
left behind by a unit a job replaced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.api.client.protocol import Client
from hopindex.core.models import Group, Job, JobState, StageCounts, Unit
from hopindex.core.settings import Settings
from hopindex.methods.plugin import phase_name
from hopindex.methods.registry import get_index_method
from hopindex.readers import RawDocument, ReadResult
from hopindex.scheduler.submit import validate_documents

GroupKey = tuple[str, str]  # (namespace, key)


@dataclass(frozen=True, slots=True)
class IndexCase:
    """What the contract builds: ``corpus`` indexed with ``method`` under ``settings``
    (``Settings`` fields, e.g. ``llm_base_url``). ``target`` is the position in the
    corpus of the document the change and delete tests touch; its revised text is
    ``revised_text``, or its text with a sentence naming nothing appended."""

    method: str
    corpus: Sequence[RawDocument]
    settings: Mapping[str, Any] = field(default_factory=dict)
    target: int = 0
    revised_text: str | None = None

    def revised_corpus(self) -> list[RawDocument]:
        old = self.corpus[self.target]
        text = self.revised_text or f"{old.text} This passage was revised later."
        return [dataclasses.replace(doc, text=text) if i == self.target else doc
                for i, doc in enumerate(self.corpus)]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """An index's documents (id → content hash), units and groups at one moment."""

    documents: dict[str, str]
    units: dict[str, Unit]
    groups: dict[GroupKey, Group]

    def citing(self, doc_id: str) -> set[str]:
        return {uid for uid, unit in self.units.items() if doc_id in unit.source_doc_ids}

    def groups_of(self, doc_id: str) -> set[GroupKey]:
        return {key for key, group in self.groups.items() if doc_id in group.members}

    def grouped_with(self, doc_id: str) -> set[str]:
        return {uid for key in self.groups_of(doc_id) for uid in self.groups[key].unit_ids}

    def touched_by(self, doc_id: str) -> set[str]:
        """The units a change to ``doc_id`` may replace: its own and its groups'."""
        return self.citing(doc_id) | self.grouped_with(doc_id)


def snapshot(client: LocalClient, index: str) -> Snapshot:
    """Every unit of ``index``: those citing its documents and those of its groups."""
    state = client.service.backends.state
    documents = state.document_hashes(index)
    units = {u.unit_id: u for u in state.units_of_documents(index, sorted(documents))}
    groups: dict[GroupKey, Group] = {}
    for namespace in state.namespaces_of_groups(index):
        found = state.get_groups(index, namespace, state.list_group_keys(index, namespace))
        groups.update({(namespace, key): group for key, group in found.items()})
    grouped = sorted({uid for group in groups.values() for uid in group.unit_ids} - set(units))
    units.update({u.unit_id: u for u in state.get_units(index, grouped)})
    return Snapshot(documents=dict(documents), units=units, groups=groups)


def unit_faces(snap: Snapshot) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """Each unit's kind, text and cited documents: what two builds must agree on."""
    return {uid: (u.kind.value, u.text, u.source_doc_ids) for uid, u in snap.units.items()}


class IndexMethodContract:
    """Subclass with an ``index_case`` fixture."""

    index: ClassVar[str] = "contract"

    @pytest.fixture
    def index_case(self) -> IndexCase:
        raise NotImplementedError("the method's test class provides the index_case fixture")

    @contextmanager
    def open_client(self, case: IndexCase, data_dir: Path) -> Iterator[LocalClient]:
        """A client of the service in this process over ``data_dir``: the contract reads
        the stores and engines behind it (``client.service``) to check the units."""
        settings = Settings(data_dir=data_dir, **case.settings).resolved()
        client = Client.local(settings=settings, through_server=False)
        assert isinstance(client, LocalClient)
        with client:
            yield client

    def ingest(self, client: LocalClient, case: IndexCase,
               corpus: Sequence[RawDocument] | None = None) -> Job:
        assert len(case.corpus) >= 2, "the contract needs a corpus of two documents or more"
        job = client.ingest_read(self.index, ReadResult(documents=list(corpus or case.corpus)),
                                 method=case.method)
        assert job.state is JobState.SUCCEEDED, (job.state, job.reason)
        assert not job.errors, job.errors
        return job

    def target_id(self, client: LocalClient, case: IndexCase) -> str:
        """The id the service gives the target document (its id, else its title's)."""
        documents, errors = validate_documents(self.index, [case.corpus[case.target]],
                                               client.settings.max_document_bytes)
        assert not errors, errors
        return documents[0].doc_id

    def assert_engines_hold(self, client: LocalClient, snap: Snapshot) -> None:
        """The snapshot saw every unit, and each engine holds exactly those."""
        state, b = client.service.backends.state, client.service.backends
        assert sum(state.count_units(self.index).values()) == len(snap.units), (
            "units citing no document and in no group")
        assert b.vectors.count_vectors(self.index) == len(snap.units)
        assert b.keywords.count_units(self.index) == len(snap.units)

    def assert_ran_nothing(self, job: Job, method: str) -> None:
        assert job.state is JobState.SUCCEEDED, (job.state, job.reason)
        for phase in get_index_method(method).phases:
            counts = job.counts.get(phase_name(method, phase), StageCounts())
            assert (counts.done, counts.failed) == (0, 0), (phase.name, counts)
        assert job.units_embedded == 0
        assert (job.groups_rebuilt, job.groups_removed) == (0, 0)
        assert (job.llm_total.calls, job.llm_total.cache_hits) == (0, 0)

    def test_unit_ids_are_deterministic(self, index_case: IndexCase, tmp_path: Path) -> None:
        """The same documents built in two fresh data directories give the same units
        (ids, kinds, texts, cited documents) and the same groups."""
        builds: list[Snapshot] = []
        for name in ("first", "second"):
            with self.open_client(index_case, tmp_path / name) as client:
                self.ingest(client, index_case)
                builds.append(snapshot(client, self.index))
        first, second = builds
        assert first.units, "the method wrote no unit"
        assert unit_faces(first) == unit_faces(second)
        assert first.groups == second.groups
        assert first.documents == second.documents

    def test_reingest_and_repair_change_nothing(self, index_case: IndexCase,
                                                tmp_path: Path) -> None:
        """Re-ingesting the same documents, then repairing the complete index, runs no
        item of any phase, embeds nothing, calls no LLM and leaves every unit and group
        as it was."""
        with self.open_client(index_case, tmp_path / "data") as client:
            self.ingest(client, index_case)
            before = snapshot(client, self.index)
            self.assert_ran_nothing(self.ingest(client, index_case), index_case.method)
            assert snapshot(client, self.index) == before
            self.assert_ran_nothing(client.indexes.repair_index(self.index), index_case.method)
            after = snapshot(client, self.index)
            assert after == before
            self.assert_engines_hold(client, after)

    def test_change_touches_only_its_units_and_groups(self, index_case: IndexCase,
                                                      tmp_path: Path) -> None:
        """Changing one document's text replaces only units citing it or belonging to its
        groups: every other unit keeps its id and text, every group it is in neither
        before nor after is unchanged, and only new or rewritten units are embedded."""
        with self.open_client(index_case, tmp_path / "data") as client:
            self.ingest(client, index_case)
            before = snapshot(client, self.index)
            job = self.ingest(client, index_case, index_case.revised_corpus())
            after = snapshot(client, self.index)
            self.assert_engines_hold(client, after)
            target = self.target_id(client, index_case)
        changed = {d for d, digest in before.documents.items()
                   if after.documents.get(d) != digest}
        assert changed == {target}
        for uid in set(before.units) - before.touched_by(target):
            assert after.units.get(uid) == before.units[uid], before.units[uid]
        new = set(after.units) - set(before.units)
        assert new <= after.touched_by(target), [after.units[u] for u in new]
        rewritten = {uid for uid in set(after.units) & set(before.units)
                     if after.units[uid].text != before.units[uid].text}
        assert new | rewritten, "the revised text reached no unit"
        assert len(new) <= job.units_embedded <= len(new) + len(rewritten)
        kept_groups = (set(before.groups) | set(after.groups)) - before.groups_of(target) \
            - after.groups_of(target)
        for key in kept_groups:
            assert after.groups.get(key) == before.groups.get(key), key

    def test_delete_leaves_no_unit_citing_the_document(self, index_case: IndexCase,
                                                       tmp_path: Path) -> None:
        """Deleting a document removes it, every unit citing it and its group
        memberships; every unit it did not touch stays as it was."""
        with self.open_client(index_case, tmp_path / "data") as client:
            self.ingest(client, index_case)
            before = snapshot(client, self.index)
            target = self.target_id(client, index_case)
            assert before.citing(target), "the target document has no unit to delete"
            job = client.delete_documents(self.index, [target])
            assert job.state is JobState.SUCCEEDED, (job.state, job.reason)
            after = snapshot(client, self.index)
            self.assert_engines_hold(client, after)
            assert client.service.backends.state.units_of_documents(self.index, [target]) == []
        assert set(after.documents) == set(before.documents) - {target}
        assert not after.citing(target), [after.units[u] for u in after.citing(target)]
        assert not after.groups_of(target)
        for uid in set(before.units) - before.touched_by(target):
            assert after.units.get(uid) == before.units[uid], before.units[uid]
