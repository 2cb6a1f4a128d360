"""The entity-catalogue and job halves of the ``StateStore`` contract.

Mixed into ``StateStoreContract``, which provides the ``store``, ``index`` and
``other`` fixtures these tests use.
"""

from __future__ import annotations

import threading
import time

import pytest

from hopindex.backends.protocols import StateStore
from hopindex.backends.state.scope_pages import SCOPE_PAGE_CHARS, scope_pages
from hopindex.core.errors import BackendError, InvalidInputError, NotFoundError
from hopindex.core.models import Dispatch, ItemError, Job, JobKind, JobState, Stage
from hopindex.testing.contracts.state_records import LEXICON, NER, TITLE, mention, new_job


class EntityCatalogueContract:
    """Mentions and the touched-entity sets incremental planning relies on."""


    def test_first_mentions_touch_every_entity(self, store: StateStore, index: str) -> None:
        """A document's first mentions report every entity it mentions."""
        touched = store.replace_mentions(index, "d1", [
            mention("paris", "d1", count=2), mention("france", "d1"),
            mention("paris", "d1", TITLE)], [NER, TITLE])
        assert touched == {"paris", "france"}

    def test_count_or_source_changes_touch_nothing(self, store: StateStore, index: str) -> None:
        """Changing only counts, or moving a mention between replaced sources, reports nothing."""
        store.replace_mentions(index, "d1", [mention("paris", "d1"), mention("rome", "d1")],
                               [NER, LEXICON])
        assert store.replace_mentions(index, "d1", [
            mention("paris", "d1", count=5), mention("rome", "d1", LEXICON)],
            [NER, LEXICON]) == set()
        assert store.mentions_of_entities(index, ["rome"]) == {
            "rome": [mention("rome", "d1", LEXICON)]}

    def test_replace_reports_gained_and_lost_entities(self, store: StateStore,
                                                      index: str) -> None:
        """Entities the document newly mentions or no longer mentions are reported."""
        store.replace_mentions(index, "d1", [mention("paris", "d1"), mention("rome", "d1")],
                               [NER])
        touched = store.replace_mentions(index, "d1", [mention("paris", "d1"),
                                                       mention("berlin", "d1")], [NER])
        assert touched == {"rome", "berlin"}
        assert store.mentions_of_entities(index, ["rome"]) == {}

    def test_replace_keeps_other_sources(self, store: StateStore, index: str) -> None:
        """Mentions from sources not replaced stay, and keep the document on the entity."""
        store.replace_mentions(index, "d1", [mention("paris", "d1", TITLE)], [TITLE])
        assert store.replace_mentions(index, "d1", [mention("paris", "d1")], [NER]) == set()
        assert store.replace_mentions(index, "d1", [], [NER]) == set()
        assert store.mentions_of_entities(index, ["paris"]) == {
            "paris": [mention("paris", "d1", TITLE)]}
        assert store.replace_mentions(index, "d1", [], [TITLE]) == {"paris"}

    def test_other_documents_do_not_hide_a_change(self, store: StateStore, index: str) -> None:
        """An entity losing one document is reported even if other documents still mention it."""
        store.replace_mentions(index, "d1", [mention("paris", "d1")], [NER])
        store.replace_mentions(index, "d2", [mention("paris", "d2")], [NER])
        assert store.replace_mentions(index, "d2", [], [NER]) == {"paris"}
        assert [m.doc_id for m in store.mentions_of_entities(index, ["paris"])["paris"]] == ["d1"]

    def test_duplicate_mentions_add_up(self, store: StateStore, index: str) -> None:
        """One entity listed twice by one source is stored once with the summed count."""
        store.replace_mentions(index, "d1", [mention("paris", "d1", count=2),
                                             mention("paris", "d1", count=3)], [NER])
        assert store.mentions_of_entities(index, ["paris"]) == {
            "paris": [mention("paris", "d1", count=5)]}

    def test_replace_rejects_foreign_mentions(self, store: StateStore, index: str) -> None:
        """Mentions of another document or of a source not being replaced are refused."""
        with pytest.raises(InvalidInputError):
            store.replace_mentions(index, "d1", [mention("paris", "d2")], [NER])
        with pytest.raises(InvalidInputError):
            store.replace_mentions(index, "d1", [mention("paris", "d1", TITLE)], [NER])
        assert store.mentions_of_entities(index, ["paris"]) == {}

    def test_delete_mentions_reports_entities(self, store: StateStore, index: str) -> None:
        """Deleting documents' mentions reports each entity they mentioned, from any source."""
        store.replace_mentions(index, "d1", [mention("paris", "d1"),
                                             mention("france", "d1", TITLE)], [NER, TITLE])
        store.replace_mentions(index, "d2", [mention("paris", "d2"), mention("rome", "d2")],
                               [NER])
        assert store.delete_mentions(index, ["d1", "missing"]) == {"paris", "france"}
        assert store.mentions_of_entities(index, ["paris", "france", "rome"]) == {
            "paris": [mention("paris", "d2")], "rome": [mention("rome", "d2")]}
        assert store.delete_mentions(index, ["d1"]) == set()
        assert store.delete_mentions(index, []) == set()

    def test_mentions_of_entities_one_per_doc_and_source(self, store: StateStore,
                                                         index: str, other: str) -> None:
        """Each (document, source) pair is one mention with its count; unmentioned are absent."""
        store.replace_mentions(index, "d1", [mention("paris", "d1", count=3),
                                             mention("paris", "d1", TITLE)], [NER, TITLE])
        store.replace_mentions(index, "d2", [mention("paris", "d2", LEXICON)], [LEXICON])
        store.replace_mentions(other, "d3", [mention("paris", "d3")], [NER])
        got = store.mentions_of_entities(index, ["paris", "nowhere"])
        assert set(got) == {"paris"}
        assert sorted(got["paris"], key=lambda m: (m.doc_id, m.source)) == [
            mention("paris", "d1", NER, 3), mention("paris", "d1", TITLE),
            mention("paris", "d2", LEXICON)]
        assert store.mentions_of_entities(index, []) == {}

    def test_title_lexicon(self, store: StateStore, index: str) -> None:
        """The lexicon maps title entities to their documents and ignores other sources."""
        store.replace_mentions(index, "d1", [mention("paris", "d1", TITLE),
                                             mention("france", "d1")], [NER, TITLE])
        store.replace_mentions(index, "d2", [mention("paris", "d2", TITLE)], [TITLE])
        lexicon = store.title_lexicon(index)
        assert set(lexicon) == {"paris"}
        assert sorted(lexicon["paris"]) == ["d1", "d2"]

    def test_mentions_of_documents_one_per_entity_and_source(self, store: StateStore,
                                                             index: str, other: str) -> None:
        """Each document's mentions come back sorted by entity and source, with their
        counts; documents without mentions, and other indexes' mentions, are absent."""
        store.replace_mentions(index, "d1", [mention("rome", "d1"), mention("paris", "d1", count=3),
                                             mention("paris", "d1", TITLE)], [NER, TITLE])
        store.replace_mentions(index, "d:2*", [mention("paris", "d:2*", LEXICON)], [LEXICON])
        store.replace_mentions(other, "d3", [mention("paris", "d3")], [NER])
        assert store.mentions_of_documents(index, ["d:2*", "d1", "d3", "missing", "d1"]) == {
            "d1": [mention("paris", "d1", NER, 3), mention("paris", "d1", TITLE),
                   mention("rome", "d1")],
            "d:2*": [mention("paris", "d:2*", LEXICON)]}
        store.delete_mentions(index, ["d1"])
        assert store.mentions_of_documents(index, ["d1"]) == {}
        assert store.mentions_of_documents(index, []) == {}


class JobStoreContract:
    """Job records and the atomicity of ``update_job``."""


    def test_job_round_trips(self, store: StateStore, index: str) -> None:
        """A job with counts and errors comes back equal; unknown ids are None."""
        job = new_job(index)
        job.count("extractive.stage1").total = 7
        job.errors.append(ItemError(item="d1", stage="extractive.stage1", reason="empty",
                                    where="text"))
        store.create_job(job)
        assert store.get_job(job.job_id) == job
        assert store.get_job("no-such-job") is None

    def test_a_jobs_corpus_tokens_round_trip(self, store: StateStore, index: str) -> None:
        """The corpus tokens a job counted, set when it is created or by an update, come
        back as they were (the ingestion multiplier divides by them); None stays None."""
        counted = new_job(index)
        counted.corpus_tokens = 12_345
        uncounted = new_job(index)
        store.create_job(counted)
        store.create_job(uncounted)
        assert store.get_job(counted.job_id) == counted
        assert store.get_job(uncounted.job_id) == uncounted

        def count(job: Job) -> None:
            job.corpus_tokens = 0

        assert store.update_job(uncounted.job_id, count).corpus_tokens == 0
        stored = store.get_job(uncounted.job_id)
        assert stored is not None and stored.corpus_tokens == 0

    def test_create_job_refuses_duplicate_id(self, store: StateStore, index: str) -> None:
        """A second create with the same id fails and leaves the first record."""
        job = new_job(index)
        store.create_job(job)
        clash = Job(job_id=job.job_id, index=index, kind=JobKind.DELETE)
        with pytest.raises(BackendError):
            store.create_job(clash)
        assert store.get_job(job.job_id) == job

    def test_update_job_applies_and_persists(self, store: StateStore, index: str) -> None:
        """The change is applied, saved and returned."""
        job = new_job(index)
        store.create_job(job)

        def start(j: Job) -> None:
            j.state = JobState.RUNNING
            j.started_at = 42.0
            j.count(Stage.EMBED).done += 3

        updated = store.update_job(job.job_id, start)
        assert updated.state is JobState.RUNNING
        assert store.get_job(job.job_id) == updated
        assert updated.counts[Stage.EMBED].done == 3

    def test_update_unknown_job_is_not_found(self, store: StateStore) -> None:
        """Updating a job id that does not exist raises NotFoundError."""
        with pytest.raises(NotFoundError):
            store.update_job("no-such-job", lambda j: None)

    def test_failing_change_writes_nothing(self, store: StateStore, index: str) -> None:
        """An exception inside the change propagates and the stored job is unchanged."""
        job = new_job(index)
        store.create_job(job)

        def broken(j: Job) -> None:
            j.units_embedded = 99
            raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            store.update_job(job.job_id, broken)
        assert store.get_job(job.job_id) == job

    def test_concurrent_updates_lose_nothing(self, store: StateStore, index: str) -> None:
        """Threads incrementing one counter at once lose no increment."""
        job = new_job(index)
        store.create_job(job)
        threads, rounds = 8, 25

        def bump(j: Job) -> None:
            value = j.units_embedded
            # Widen the read-modify-write window a racy store would lose in: work inside
            # the change, not a wait; the count below holds however long it takes.
            time.sleep(0.0005)
            j.units_embedded = value + 1

        def worker() -> None:
            for _ in range(rounds):
                store.update_job(job.job_id, bump)

        pool = [threading.Thread(target=worker) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        final = store.get_job(job.job_id)
        assert final is not None
        assert final.units_embedded == threads * rounds

    def test_dispatches_keep_the_newest_last_per_job(self, store: StateStore,
                                                      index: str) -> None:
        """The last dispatch added is the one returned, per job; clearing one job's
        leaves the other's."""
        job, other = new_job(index), new_job(index)
        assert store.last_dispatch(job.job_id) is None
        first = Dispatch(phase="stage1", tasks=[{"task": "t", "options": {"task_id": "a"}}],
                         callback={"task": "cb"}, created_at=1.0)
        second = Dispatch(phase="stage2", tasks=[], callback={"task": "cb2"}, created_at=2.0)
        store.add_dispatch(job.job_id, first)
        store.add_dispatch(job.job_id, second)
        store.add_dispatch(other.job_id, first)
        assert store.last_dispatch(job.job_id) == second
        store.clear_dispatches(job.job_id)
        assert store.last_dispatch(job.job_id) is None
        assert store.last_dispatch(other.job_id) == first

    def test_an_update_once_applies_once_and_keeps_its_key_beside_the_record(
            self, store: StateStore, index: str) -> None:
        """A keyed update applies once (the second never calls its change), per job; the
        keys are kept beside the record, which is no larger after 300 settled updates
        than after the first but for its counter; deleting the index forgets them."""
        job, other = new_job(index), new_job(index)
        store.create_job(job)
        store.create_job(other)
        calls: list[str] = []

        def bump(record: Job) -> None:
            calls.append(record.job_id)
            record.units_embedded += 1

        store.update_job(job.job_id, bump, once="task:1")
        size = len(str(store.get_job(job.job_id)))
        assert store.update_job(job.job_id, bump, once="task:1").units_embedded == 1
        assert calls == [job.job_id]
        store.update_job(other.job_id, bump, once="task:1")
        for n in range(2, 301):
            store.update_job(job.job_id, bump, once=f"task:{n}")
        stored = store.get_job(job.job_id)
        assert stored is not None and stored.units_embedded == 300
        assert len(str(stored)) <= size + 2  # "1" became "300"
        assert store.settled_keys(job.job_id, ["task:1", "task:300", "task:301"]) == {
            "task:1", "task:300"}
        assert store.settled_keys(job.job_id, []) == set()
        store.delete_index(index)
        assert store.settled_keys(job.job_id, ["task:1"]) == set()

    def test_a_job_scope_round_trips_in_pages_and_replaces_the_last(
            self, store: StateStore, index: str) -> None:
        """A scope larger than a page comes back whole and in order; a later put replaces
        it (a shorter one leaves no page of the longer behind); deleting one job's scope
        leaves another's."""
        job, other = new_job(index), new_job(index)
        assert store.get_job_scope(job.job_id) is None
        ids = [f"doc-{n:07d}" for n in range(SCOPE_PAGE_CHARS // 8)]
        big = {"doc_ids": ids, "hashes": {i: "h" + i for i in ids}, "touched": {"e": ["x"]}}
        assert len(scope_pages(big)) > 2
        store.put_job_scope(job.job_id, big)
        store.put_job_scope(other.job_id, {"doc_ids": ["o"]})
        assert store.get_job_scope(job.job_id) == big
        store.put_job_scope(job.job_id, {"doc_ids": ["a"], "touched": {}})
        assert store.get_job_scope(job.job_id) == {"doc_ids": ["a"], "touched": {}}
        store.delete_job_scope(job.job_id)
        assert store.get_job_scope(job.job_id) is None
        assert store.get_job_scope(other.job_id) == {"doc_ids": ["o"]}

    def test_open_jobs_in_creation_order_whatever_their_clocks(self, store: StateStore,
                                                               index: str, other: str) -> None:
        """An index's unfinished jobs list in the order they were created, not by their
        timestamps (processes' clocks differ), and a job leaves the list when it ends."""
        late_clock, early_clock, foreign = (new_job(index, 300.0), new_job(index, 100.0),
                                            new_job(other, 50.0))
        done = new_job(index, 10.0)
        done.state = JobState.SUCCEEDED
        for job in (late_clock, done, early_clock, foreign):
            store.create_job(job)
        assert [j.job_id for j in store.open_jobs(index)] == [late_clock.job_id,
                                                              early_clock.job_id]

        def finish(job: Job) -> None:
            job.state = JobState.FAILED

        store.update_job(late_clock.job_id, finish)
        assert [j.job_id for j in store.open_jobs(index)] == [early_clock.job_id]
        assert [j.job_id for j in store.open_jobs(other)] == [foreign.job_id]
        assert store.open_jobs("no-such-index") == []

    def test_list_jobs_newest_first_by_index(self, store: StateStore, index: str,
                                             other: str) -> None:
        """Jobs list newest first, filter by index, and honour the limit."""
        old, mid, new = new_job(index, 100.0), new_job(index, 200.0), new_job(index, 300.0)
        foreign = new_job(other, 250.0)
        for job in (mid, old, foreign, new):
            store.create_job(job)
        assert [j.job_id for j in store.list_jobs(index)] == [new.job_id, mid.job_id, old.job_id]
        assert [j.job_id for j in store.list_jobs(index, limit=2)] == [new.job_id, mid.job_id]
        everywhere = [j.job_id for j in store.list_jobs(limit=1000)]
        assert everywhere.index(foreign.job_id) < everywhere.index(mid.job_id)
        assert {new.job_id, mid.job_id, old.job_id, foreign.job_id} <= set(everywhere)
