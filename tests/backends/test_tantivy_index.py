"""The tantivy adapter against the KeywordIndex contract, plus what only it promises."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import tantivy

from hopindex.backends.keyword.tantivy_index import ANALYZER, TantivyKeywordIndex
from hopindex.core.errors import InvalidIndexNameError
from hopindex.testing.contracts.keyword_index import CORPUS, KeywordIndexContract, record


class TestTantivyKeywordIndex(KeywordIndexContract):
    persistent = True

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[TantivyKeywordIndex]:
        store = TantivyKeywordIndex(tmp_path / "keyword")
        yield store
        store.close()

    @pytest.fixture
    def reopen_store(self, tmp_path: Path) -> Iterator[Callable[[], TantivyKeywordIndex]]:
        opened: list[TantivyKeywordIndex] = []

        def reopen() -> TantivyKeywordIndex:
            opened.append(TantivyKeywordIndex(tmp_path / "keyword"))
            return opened[-1]

        yield reopen
        for store in opened:
            store.close()


@pytest.fixture
def filled(tmp_path: Path) -> Iterator[tuple[TantivyKeywordIndex, tantivy.Index]]:
    store = TantivyKeywordIndex(tmp_path)
    store.ensure_index("idx")
    store.index_units("idx", [record(key) for key in CORPUS])
    yield store, tantivy.Index.open(str(tmp_path / "idx"))
    store.close()


def test_query_analyser_matches_en_stem(
        filled: tuple[TantivyKeywordIndex, tantivy.Index]) -> None:
    """Every term the query analyser makes from indexed text exists in the en_stem postings."""
    _, raw = filled
    searcher = raw.searcher()
    for text, *_ in CORPUS.values():
        for term in ANALYZER.analyze(text):
            assert searcher.doc_freq("text", term) > 0, term


@pytest.mark.parametrize("query", ["capital of France", "the quick fox runs", "New York city"])
def test_scores_equal_the_query_parser_bag_of_words(
        filled: tuple[TantivyKeywordIndex, tantivy.Index], query: str) -> None:
    """The safe term-query build scores exactly like tantivy's own parser on plain words."""
    store, raw = filled
    searcher = raw.searcher()
    parsed = searcher.search(raw.parse_query(query, ["text"]), 10).hits
    expected = [(searcher.doc(address).get_first("unit_id"), score) for score, address in parsed]
    got = [(hit.unit_id, hit.score) for hit in store.search_text("idx", query, k=10)]
    assert [unit for unit, _ in got] == [unit for unit, _ in expected]
    assert [score for _, score in got] == pytest.approx([score for _, score in expected])


def test_unsafe_index_name_is_refused(tmp_path: Path) -> None:
    """Index names become directories, so a path-like name never touches the disk."""
    store = TantivyKeywordIndex(tmp_path / "keyword")
    with pytest.raises(InvalidIndexNameError):
        store.ensure_index("../escape")
    assert not (tmp_path / "escape").exists()


def test_search_only_process_takes_no_writer_lock(tmp_path: Path) -> None:
    """Opening and searching never creates a writer, so another process can keep writing."""
    writer = TantivyKeywordIndex(tmp_path)
    writer.ensure_index("idx")
    writer.index_units("idx", [record("paris")])
    reader = TantivyKeywordIndex(tmp_path)
    try:
        assert reader.count_units("idx") == 1
        assert reader.search_text("idx", "Eiffel", k=1)
        writer.index_units("idx", [record("fox")])
    finally:
        reader.close()
        writer.close()
