"""The ``KeywordIndex`` contract: what every BM25 adapter must do, embedded or server."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import ClassVar

import pytest

from hopindex.backends.protocols import KeywordIndex, KeywordRecord, UnitFilter, UnitPayload
from hopindex.core.errors import NotFoundError
from hopindex.core.models import Hit, UnitKind

CORPUS: dict[str, tuple[str, UnitKind, tuple[str, ...], tuple[str, ...]]] = {
    # key: (text, kind, source_doc_ids, entities)
    "paris": ("Paris\nParis is the capital of France. The Eiffel Tower stands in Paris.",
              UnitKind.PASSAGE, ("d1",), ("paris", "france")),
    "fox": ("Quick fox\nThe quick brown fox runs across the field every morning.",
            UnitKind.PASSAGE, ("d2",), ("fox",)),
    "berlin": ("Berlin is the capital and largest city of Germany.",
               UnitKind.AKU, ("d3",), ("berlin", "germany")),
    "nyc": ("New York City hosts the headquarters of the United Nations.",
            UnitKind.BRIDGE, ("d4", "d1"), ("new york city", "united nations")),
    "york": ("York is an old city in England where new walls were built.",
             UnitKind.PASSAGE, ("d5",), ("york", "england")),
}

NASTY_QUERIES = [
    'capital "of France', "title:Paris", "(capital AND", "OR", "AND NOT", "capital)",
    "Paris^2", "fox~", "c++ && || !", "a:b:c", "[1 TO 5]", "{x}", "\\", "*", "?", "-",
    "+capital -France", "'single' \"double\"", "field:(a OR b)", "/regex.*/", "NOT",
    "café naïve 東京", "\x00", "😀 capital", "what is the capital of France?",
]


def uid(key: str) -> str:
    """A stable uuid string per corpus key, as real unit ids are uuid strings."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"hopindex-keyword-contract-{key}"))


def record(key: str, text: str | None = None) -> KeywordRecord:
    base_text, kind, docs, entities = CORPUS[key]
    return KeywordRecord(unit_id=uid(key), text=base_text if text is None else text,
                         payload=UnitPayload(kind=kind, source_doc_ids=docs, entities=entities))


def ids(hits: list[Hit]) -> list[str]:
    return [hit.unit_id for hit in hits]


class KeywordIndexContract:
    """Subclass with a ``store`` fixture; set ``persistent = True`` and add ``reopen_store``
    when a second instance over the same location must see the data."""

    persistent: ClassVar[bool] = False

    @pytest.fixture
    def store(self) -> Iterator[KeywordIndex]:
        raise NotImplementedError("the adapter's test class provides the store fixture")

    @pytest.fixture
    def reopen_store(self) -> Callable[[], KeywordIndex]:
        raise NotImplementedError("persistent adapters provide the reopen_store fixture")

    @pytest.fixture
    def index(self, store: KeywordIndex) -> Iterator[str]:
        name = f"ct-{uuid.uuid4().hex[:12]}"
        store.ensure_index(name)
        yield name
        store.drop_index(name)

    @pytest.fixture
    def filled(self, store: KeywordIndex, index: str) -> str:
        store.index_units(index, [record(key) for key in CORPUS])
        return index

    def test_satisfies_protocol(self, store: KeywordIndex) -> None:
        """The adapter is a structural ``KeywordIndex``."""
        assert isinstance(store, KeywordIndex)

    def test_bm25_ranks_matching_unit_first(self, store: KeywordIndex, filled: str) -> None:
        """The unit sharing the rarest query terms ranks first; scores are positive, sorted."""
        hits = store.search_text(filled, "Eiffel Tower in Paris", k=5)
        assert ids(hits)[0] == uid("paris")
        scores = [hit.score for hit in hits]
        assert all(score > 0 for score in scores)
        assert scores == sorted(scores, reverse=True)
        assert ids(store.search_text(filled, "largest German city", k=1)) == [uid("berlin")]

    def test_bag_of_words_matches_any_term(self, store: KeywordIndex, filled: str) -> None:
        """A unit matching only some query words is still found (OR semantics, not AND)."""
        found = ids(store.search_text(filled, "capital zebra unicorn", k=10))
        assert sorted(found) == sorted([uid("paris"), uid("berlin")])

    def test_k_bounds_results(self, store: KeywordIndex, filled: str) -> None:
        """k caps the hit count and k = 0 returns nothing."""
        assert len(store.search_text(filled, "the city capital", k=2)) == 2
        assert store.search_text(filled, "the city capital", k=0) == []

    def test_stemming_matches_inflections(self, store: KeywordIndex, filled: str) -> None:
        """English stemming: 'running' finds the unit saying 'runs', 'capitals' finds 'capital'."""
        assert ids(store.search_text(filled, "running", k=5)) == [uid("fox")]
        assert sorted(ids(store.search_text(filled, "capitals", k=5))) == sorted(
            [uid("paris"), uid("berlin")])

    def test_matching_is_case_insensitive(self, store: KeywordIndex, filled: str) -> None:
        """Upper-case queries match lower-case text and vice versa."""
        assert ids(store.search_text(filled, "EIFFEL", k=5)) == [uid("paris")]

    @pytest.mark.parametrize("query", NASTY_QUERIES)
    def test_query_syntax_characters_never_raise(self, store: KeywordIndex, filled: str,
                                                 query: str) -> None:
        """User text with query-language syntax is searched as words, never parsed."""
        hits = store.search_text(filled, query, k=5)
        assert isinstance(hits, list)
        store.search_phrase(filled, query, k=5)

    def test_syntax_characters_do_not_change_meaning(self, store: KeywordIndex,
                                                     filled: str) -> None:
        """'title:Paris' and '(Paris AND' search the words, so Paris is still found first."""
        for query in ("title:Paris", "(Paris AND", '"Paris'):
            assert ids(store.search_text(filled, query, k=1)) == [uid("paris")]

    @pytest.mark.parametrize("query", ["", "   ", "\n\t", "!!! ---"])
    def test_empty_query_returns_nothing(self, store: KeywordIndex, filled: str,
                                         query: str) -> None:
        """A query with no words returns no hits rather than everything or an error."""
        assert store.search_text(filled, query, k=5) == []
        assert store.search_phrase(filled, query, k=5) == []

    def test_phrase_search_needs_consecutive_words(self, store: KeywordIndex,
                                                   filled: str) -> None:
        """'New York' matches 'New York City', not a text holding 'York' and 'new' apart."""
        assert ids(store.search_phrase(filled, "New York", k=5)) == [uid("nyc")]
        assert sorted(ids(store.search_text(filled, "New York", k=5))) == sorted(
            [uid("nyc"), uid("york")])

    def test_phrase_search_finds_titles(self, store: KeywordIndex, filled: str) -> None:
        """A multi-word title is found wherever it occurs; a single word works too."""
        assert ids(store.search_phrase(filled, "United Nations", k=5)) == [uid("nyc")]
        assert ids(store.search_phrase(filled, "Eiffel", k=5)) == [uid("paris")]
        assert store.search_phrase(filled, "Nations United", k=5) == []

    def test_phrase_search_with_filter(self, store: KeywordIndex, filled: str) -> None:
        """Phrase hits honour the unit filter."""
        assert ids(store.search_phrase(filled, "the capital", k=5,
                                       unit_filter=UnitFilter(kinds=(UnitKind.AKU,)))) == [
            uid("berlin")]

    def test_filter_by_kind(self, store: KeywordIndex, filled: str) -> None:
        """A kinds filter keeps only units of those kinds."""
        hits = store.search_text(filled, "city capital", k=10,
                                 unit_filter=UnitFilter(kinds=(UnitKind.AKU, UnitKind.BRIDGE)))
        assert sorted(ids(hits)) == sorted([uid("berlin"), uid("nyc")])

    def test_filter_by_source_doc_ids(self, store: KeywordIndex, filled: str) -> None:
        """A source filter matches units citing any of the given documents."""
        hits = store.search_text(filled, "Paris capital city United", k=10,
                                 unit_filter=UnitFilter(source_doc_ids=("d1",)))
        assert sorted(ids(hits)) == sorted([uid("paris"), uid("nyc")])

    def test_filter_by_entities(self, store: KeywordIndex, filled: str) -> None:
        """An entities filter matches multi-word entity values exactly."""
        hits = store.search_text(filled, "city", k=10,
                                 unit_filter=UnitFilter(entities=("new york city", "york")))
        assert sorted(ids(hits)) == sorted([uid("nyc"), uid("york")])
        assert store.search_text(filled, "city", k=10,
                                 unit_filter=UnitFilter(entities=("new york",))) == []

    def test_filter_fields_all_must_match(self, store: KeywordIndex, filled: str) -> None:
        """Non-empty filter fields combine with AND; values within a field with OR."""
        hits = store.search_text(filled, "capital city", k=10, unit_filter=UnitFilter(
            kinds=(UnitKind.PASSAGE, UnitKind.AKU), entities=("france", "germany", "york")))
        assert sorted(ids(hits)) == sorted([uid("paris"), uid("berlin"), uid("york")])
        assert store.search_text(filled, "capital", k=10, unit_filter=UnitFilter(
            kinds=(UnitKind.BRIDGE,), source_doc_ids=("d3",))) == []

    def test_filter_does_not_change_scores(self, store: KeywordIndex, filled: str) -> None:
        """A filter selects units; the BM25 score of a kept unit is unchanged."""
        plain = {hit.unit_id: hit.score for hit in store.search_text(filled, "capital", k=10)}
        filtered = store.search_text(filled, "capital", k=10,
                                     unit_filter=UnitFilter(kinds=(UnitKind.AKU,)))
        assert ids(filtered) == [uid("berlin")]
        assert filtered[0].score == pytest.approx(plain[uid("berlin")], rel=1e-5)

    def test_upsert_replaces_text(self, store: KeywordIndex, filled: str) -> None:
        """Indexing an existing unit id replaces its text: old words stop matching."""
        store.index_units(filled, [record("fox", text="A slow green turtle walks home.")])
        assert store.count_units(filled) == len(CORPUS)
        assert store.search_text(filled, "fox", k=5) == []
        assert ids(store.search_text(filled, "turtle", k=5)) == [uid("fox")]

    def test_duplicate_ids_within_one_batch_keep_the_last(self, store: KeywordIndex,
                                                          index: str) -> None:
        """A batch that repeats an id stores one unit, with the last text."""
        store.index_units(index, [record("fox", text="first version"),
                                  record("fox", text="second version")])
        assert store.count_units(index) == 1
        assert store.search_text(index, "first", k=5) == []
        assert ids(store.search_text(index, "second", k=5)) == [uid("fox")]

    def test_delete_removes_units(self, store: KeywordIndex, filled: str) -> None:
        """Deleted units vanish from search and count; unknown ids are ignored."""
        store.delete_units(filled, [uid("paris"), uid("nope")])
        assert store.count_units(filled) == len(CORPUS) - 1
        assert store.search_text(filled, "Eiffel", k=5) == []

    def test_empty_batches_are_no_ops(self, store: KeywordIndex, filled: str) -> None:
        """Empty index and delete batches change nothing and do not fail."""
        store.index_units(filled, [])
        store.delete_units(filled, [])
        assert store.count_units(filled) == len(CORPUS)

    def test_count(self, store: KeywordIndex, index: str) -> None:
        """count_units reports the number of indexed units."""
        assert store.count_units(index) == 0
        store.index_units(index, [record("paris"), record("fox")])
        assert store.count_units(index) == 2

    def test_unknown_index_is_empty(self, store: KeywordIndex) -> None:
        """An index never created searches, counts and deletes as empty, without failing."""
        name = f"ct-missing-{uuid.uuid4().hex[:8]}"
        assert store.count_units(name) == 0
        assert store.search_text(name, "capital", k=5) == []
        assert store.search_phrase(name, "New York", k=5) == []
        store.delete_units(name, [uid("paris")])
        store.drop_index(name)

    def test_index_into_unknown_index_raises_not_found(self, store: KeywordIndex) -> None:
        """Writing to an index never ensured is an error naming it, not a silent create."""
        name = f"ct-missing-{uuid.uuid4().hex[:8]}"
        with pytest.raises(NotFoundError, match=name):
            store.index_units(name, [record("paris")])

    def test_ensure_index_is_idempotent(self, store: KeywordIndex, filled: str) -> None:
        """Ensuring an existing index keeps its units."""
        store.ensure_index(filled)
        assert store.count_units(filled) == len(CORPUS)

    def test_indexes_are_isolated(self, store: KeywordIndex, filled: str) -> None:
        """Units written to one index never show up in another."""
        other = f"ct-{uuid.uuid4().hex[:12]}"
        store.ensure_index(other)
        try:
            assert store.count_units(other) == 0
            assert store.search_text(other, "capital", k=5) == []
        finally:
            store.drop_index(other)

    def test_drop_index(self, store: KeywordIndex, filled: str) -> None:
        """Dropping removes every unit; ensuring again starts empty and writable."""
        store.drop_index(filled)
        assert store.count_units(filled) == 0
        assert store.search_text(filled, "capital", k=5) == []
        store.ensure_index(filled)
        assert store.count_units(filled) == 0
        store.index_units(filled, [record("berlin")])
        assert ids(store.search_text(filled, "capital", k=5)) == [uid("berlin")]

    def test_persistence_across_reopen(self, store: KeywordIndex, filled: str,
                                       request: pytest.FixtureRequest) -> None:
        """A new instance over the same location sees the units and can keep writing."""
        if not self.persistent:
            pytest.skip("adapter declares no persistence")
        reopen_store: Callable[[], KeywordIndex] = request.getfixturevalue("reopen_store")
        store.close()
        reopened = reopen_store()
        assert reopened.count_units(filled) == len(CORPUS)
        assert ids(reopened.search_text(filled, "Eiffel", k=5)) == [uid("paris")]
        assert ids(reopened.search_phrase(filled, "New York", k=5)) == [uid("nyc")]
        reopened.index_units(filled, [record("fox", text="turtle")])
        assert ids(reopened.search_text(filled, "turtle", k=5)) == [uid("fox")]
        assert reopened.count_units(filled) == len(CORPUS)
        reopened.drop_index(filled)
