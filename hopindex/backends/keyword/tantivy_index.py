"""``KeywordIndex`` on tantivy: BM25 over unit texts, one tantivy index per hopindex index.

Schema: ``unit_id`` (raw, stored: hits resolve to it, deletes address it by
term), ``text`` (``en_stem``, not stored: the state store keeps texts) and
``kind``, ``source_doc_ids``, ``entities`` as raw multi-valued keyword fields
for filters.

User text never reaches tantivy's query parser: queries are analysed here
with the same chain as ``en_stem`` and built from term (or phrase) queries, so
quotes, colons, brackets or a stray ``AND`` cannot make a search fail. A
SHOULD of one term query per analysed token is what the parser itself builds
for a plain bag-of-words query, so BM25 scores are identical.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import tantivy

from hopindex.backends.embedded import engine_errors, index_folder
from hopindex.backends.engine_lock import claim_folder
from hopindex.backends.protocols import KeywordRecord, UnitFilter
from hopindex.core.errors import BackendError, NotFoundError
from hopindex.core.logging import get_logger
from hopindex.core.models import Hit

log = get_logger(__name__)

ENGINE = "tantivy"

TEXT_TOKENIZER = "en_stem"
# tantivy writes meta.json when an index is created; its presence means "an index lives here".
_META_FILE = "meta.json"
# The writer's indexing arena; tantivy lowers its thread count if this is tight.
_WRITER_HEAP_BYTES = 64_000_000

_WriteFn = Callable[[tantivy.IndexWriter], None]


def _build_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("unit_id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("text", stored=False, tokenizer_name=TEXT_TOKENIZER,
                           index_option="position")
    for name in ("kind", "source_doc_ids", "entities"):
        builder.add_text_field(name, stored=False, tokenizer_name="raw", index_option="basic")
    return builder.build()


def _build_analyzer() -> tantivy.TextAnalyzer:
    """The chain tantivy registers as ``en_stem``: simple tokens, ≤40 bytes, lower, stem."""
    return (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(40))
            .filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.stemmer("english"))
            .build())


SCHEMA = _build_schema()
ANALYZER = _build_analyzer()


@dataclass(slots=True)
class _OpenIndex:
    index: tantivy.Index
    # Opened on the first write, not on open: tantivy allows one writer per index
    # across processes, and a process that only searches must not hold its lock.
    writer: tantivy.IndexWriter | None = None
    write_lock: threading.Lock = field(default_factory=threading.Lock)


def _filter_query(unit_filter: UnitFilter | None) -> tantivy.Query | None:
    """Every non-empty field must match; within a field any listed value matches."""
    if unit_filter is None or unit_filter.is_empty:
        return None
    return tantivy.Query.boolean_query([
        (tantivy.Occur.Must, tantivy.Query.term_set_query(SCHEMA, name, values))
        for name, values in unit_filter.conditions()
    ])


def _with_filter(query: tantivy.Query, unit_filter: UnitFilter | None) -> tantivy.Query:
    restriction = _filter_query(unit_filter)
    if restriction is None:
        return query
    # A filter must select, not score: at constant 0 it leaves the BM25 scores untouched.
    return tantivy.Query.boolean_query([
        (tantivy.Occur.Must, query),
        (tantivy.Occur.Must, tantivy.Query.const_score_query(restriction, 0.0)),
    ])


def _document(record: KeywordRecord) -> tantivy.Document:
    payload = record.payload
    return tantivy.Document(unit_id=record.unit_id, text=record.text, kind=payload.kind.value,
                            source_doc_ids=list(payload.source_doc_ids),
                            entities=list(payload.entities))


class TantivyKeywordIndex:
    """BM25 keyword search in embedded tantivy indexes under ``root``."""

    def __init__(self, root: Path) -> None:
        self._root = Path(root)
        # tantivy locks only its writer: another process could search, but its writes
        # would meet the owner's writer lock and its drops would delete files under the
        # owner. One process per folder, as for Qdrant Edge (engine_lock.py).
        self._claim = claim_folder(self._root, ENGINE)
        self._indexes: dict[str, _OpenIndex] = {}
        # Guards the dict and index open/create/close; writes take the index's own lock.
        self._lock = threading.RLock()

    # -- lifecycle -----------------------------------------------------------------

    def ensure_index(self, index: str) -> None:
        path = self._path(index)
        with self._lock:
            if self._open(index) is not None:
                return
            path.mkdir(parents=True, exist_ok=True)
            with engine_errors(ENGINE, index, "create"):
                self._indexes[index] = _OpenIndex(index=tantivy.Index(SCHEMA, str(path),
                                                                      reuse=True))
            log.info("keyword_index_created", index=index, path=str(path))

    def drop_index(self, index: str) -> None:
        path = self._path(index)
        with self._lock:
            opened = self._indexes.pop(index, None)
            if opened is not None:
                with opened.write_lock:
                    self._release_writer(index, opened)
            if path.exists():
                shutil.rmtree(path)
                log.info("keyword_index_dropped", index=index, path=str(path))

    def close(self) -> None:
        with self._lock:
            indexes, self._indexes = self._indexes, {}
        failure: BackendError | None = None
        for index, opened in indexes.items():
            # One index failing to close must not leave the others holding writer locks.
            try:
                with opened.write_lock:
                    self._release_writer(index, opened)
            except BackendError as exc:
                log.error("keyword_index_close_failed", index=index, error=str(exc))
                failure = failure or exc
        self._claim.release()
        if failure is not None:
            raise failure

    # -- writes --------------------------------------------------------------------

    def index_units(self, index: str, records: Sequence[KeywordRecord]) -> None:
        if not records:
            return
        opened = self._open(index)
        if opened is None:
            raise NotFoundError(f"keyword index {index!r} does not exist; call ensure_index first")
        documents = [(record.unit_id, _document(record)) for record in records]

        def write(writer: tantivy.IndexWriter) -> None:
            for unit_id, document in documents:
                # Delete then add in one commit: tantivy orders operations by opstamp, so
                # the delete removes only older copies and an upsert leaves exactly one.
                writer.delete_documents_by_term("unit_id", unit_id)
                writer.add_document(document)

        self._write(index, opened, "index", write)
        log.debug("keyword_units_indexed", index=index, count=len(records))

    def delete_units(self, index: str, unit_ids: Sequence[str]) -> None:
        if not unit_ids:
            return
        opened = self._open(index)
        if opened is None:
            return

        def write(writer: tantivy.IndexWriter) -> None:
            for unit_id in unit_ids:
                writer.delete_documents_by_term("unit_id", unit_id)

        self._write(index, opened, "delete", write)
        log.debug("keyword_units_deleted", index=index, count=len(unit_ids))

    # -- reads ---------------------------------------------------------------------

    def search_text(self, index: str, query: str, k: int,
                    unit_filter: UnitFilter | None = None) -> list[Hit]:
        if k < 1:
            return []
        terms = ANALYZER.analyze(query)
        if not terms:
            return []
        bag = tantivy.Query.boolean_query([
            (tantivy.Occur.Should, tantivy.Query.term_query(SCHEMA, "text", term))
            for term in terms
        ])
        return self._search(index, _with_filter(bag, unit_filter), k)

    def search_phrase(self, index: str, phrase: str, k: int,
                      unit_filter: UnitFilter | None = None) -> list[Hit]:
        if k < 1:
            return []
        tokens = ANALYZER.pre_tokenize(phrase).tokens
        if not tokens:
            return []
        if len(tokens) == 1:
            # tantivy's phrase query panics on a single term; one word is a term query.
            match = tantivy.Query.term_query(SCHEMA, "text", tokens[0].text)
        else:
            # Analyser positions keep the gap left by a dropped over-long token.
            words: list[str | tuple[int, str]] = [(token.position, token.text)
                                                  for token in tokens]
            match = tantivy.Query.phrase_query(SCHEMA, "text", words)
        return self._search(index, _with_filter(match, unit_filter), k)

    def count_units(self, index: str) -> int:
        opened = self._open(index)
        if opened is None:
            return 0
        with engine_errors(ENGINE, index, "count"):
            return int(opened.index.searcher().num_docs)

    # -- helpers -------------------------------------------------------------------

    def _path(self, index: str) -> Path:
        return index_folder(self._root, index)

    def _open(self, index: str) -> _OpenIndex | None:
        """The open index ``index``, opening it from disk if needed; None if absent."""
        path = self._path(index)
        with self._lock:
            opened = self._indexes.get(index)
            if opened is not None:
                return opened
            if not (path / _META_FILE).exists():
                return None
            # reuse=True opens the existing index and fails if its schema differs.
            with engine_errors(ENGINE, index, "open"):
                opened = _OpenIndex(index=tantivy.Index(SCHEMA, str(path), reuse=True))
            self._indexes[index] = opened
            log.debug("keyword_index_opened", index=index, path=str(path))
            return opened

    def _search(self, index: str, query: tantivy.Query, k: int) -> list[Hit]:
        opened = self._open(index)
        if opened is None:
            return []
        with engine_errors(ENGINE, index, "search"):
            searcher = opened.index.searcher()
            result = searcher.search(query, k, count=False)
            return [Hit(unit_id=str(searcher.doc(address).get_first("unit_id")),
                        score=float(score))
                    for score, address in result.hits]

    @staticmethod
    def _write(index: str, opened: _OpenIndex, action: str, write: _WriteFn) -> None:
        """Run ``write`` on the index's writer, commit, and make the result searchable."""
        with opened.write_lock, engine_errors(ENGINE, index, action):
            if opened.writer is None:
                opened.writer = opened.index.writer(heap_size=_WRITER_HEAP_BYTES)
            writer = opened.writer
            try:
                write(writer)
                writer.commit()
            except BaseException:
                # Drop the half-applied batch so the next commit cannot publish it.
                with suppress(Exception):
                    writer.rollback()
                raise
            # The default reload policy lags a commit; reload so a search right after
            # this call sees it.
            opened.index.reload()

    @staticmethod
    def _release_writer(index: str, opened: _OpenIndex) -> None:
        """Let pending merges finish and free the writer's lock (every write is committed)."""
        writer, opened.writer = opened.writer, None
        if writer is not None:
            with engine_errors(ENGINE, index, "close writer"):
                writer.wait_merging_threads()

