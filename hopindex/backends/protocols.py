"""Small protocols, one per backend role. Methods never see a concrete adapter.

Every adapter of a protocol passes the same contract suite, under
``hopindex/testing/contracts/`` (shipped, so third-party adapters inherit them too):
the stores', engines', event log's, embedder's, reranker's, response cache's and rate
limiter's; a server adapter inherits its suite unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from hopindex.core.events import Event, EventType, Webhook
from hopindex.core.models import (
    Dispatch,
    Document,
    EntityMention,
    FailedItem,
    Group,
    Hit,
    Job,
    MentionSource,
    TextAnalysis,
    Unit,
    UnitKind,
)

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class UnitFilter:
    """Restrict a search to units matching every given field (any value within a field)."""

    kinds: tuple[UnitKind, ...] = ()
    source_doc_ids: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.kinds or self.source_doc_ids or self.entities)

    def conditions(self) -> list[tuple[str, list[str]]]:
        """The payload fields to match, each with the values any of which matches; empty
        fields are left out. Every engine's filter is built from this one list."""
        fields = [("kind", [kind.value for kind in self.kinds]),
                  ("source_doc_ids", list(self.source_doc_ids)),
                  ("entities", list(self.entities))]
        return [(name, values) for name, values in fields if values]


@dataclass(frozen=True, slots=True)
class UnitPayload:
    """The fields stored beside a vector or posting so searches can filter on them."""

    kind: UnitKind
    source_doc_ids: tuple[str, ...]
    entities: tuple[str, ...] = ()

    @classmethod
    def of(cls, unit: Unit) -> UnitPayload:
        return cls(kind=unit.kind, source_doc_ids=unit.source_doc_ids, entities=unit.entities)

    def as_fields(self) -> dict[str, Any]:
        """The payload as stored beside a vector or posting (JSON-ready)."""
        return {"kind": self.kind.value, "source_doc_ids": list(self.source_doc_ids),
                "entities": list(self.entities)}


@dataclass(frozen=True, slots=True)
class VectorRecord:
    unit_id: str
    vector: Vector
    payload: UnitPayload


@dataclass(frozen=True, slots=True)
class KeywordRecord:
    unit_id: str
    text: str
    payload: UnitPayload


@runtime_checkable
class VectorStore(Protocol):
    """Dense vectors, one collection per hopindex index, keyed by unit id.

    ``get_vectors`` reads stored points back (in the order asked, unknown ids left
    out) so an index can be exported and moved between stores.
    """

    def ensure_index(self, index: str, dimension: int) -> None: ...
    def upsert_vectors(self, index: str, records: Sequence[VectorRecord]) -> None: ...
    def delete_vectors(self, index: str, unit_ids: Sequence[str]) -> None: ...
    def search_vectors(self, index: str, vector: Vector, k: int,
                       unit_filter: UnitFilter | None = None) -> list[Hit]: ...
    def count_vectors(self, index: str) -> int: ...
    def get_vectors(self, index: str, unit_ids: Sequence[str]) -> list[VectorRecord]: ...
    def drop_index(self, index: str) -> None: ...
    def close(self) -> None: ...


@runtime_checkable
class KeywordIndex(Protocol):
    """BM25 postings, one index per hopindex index, keyed by unit id."""

    def ensure_index(self, index: str) -> None: ...
    def index_units(self, index: str, records: Sequence[KeywordRecord]) -> None: ...
    def delete_units(self, index: str, unit_ids: Sequence[str]) -> None: ...
    def search_text(self, index: str, query: str, k: int,
                    unit_filter: UnitFilter | None = None) -> list[Hit]: ...
    def search_phrase(self, index: str, phrase: str, k: int,
                      unit_filter: UnitFilter | None = None) -> list[Hit]: ...
    def count_units(self, index: str) -> int: ...
    def drop_index(self, index: str) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class IndexInfo:
    name: str
    method: str
    created_at: float
    options: dict[str, Any] = field(default_factory=dict)


class IndexCatalog(Protocol):
    """The hopindex indexes that exist and the method each was built for.

    ``set_index_options`` replaces an existing index's options whole (its name, method
    and creation time never change) and raises ``NotFoundError`` for an unknown one.
    """

    def create_index(self, info: IndexInfo) -> IndexInfo: ...
    def get_index(self, name: str) -> IndexInfo | None: ...
    def list_indexes(self) -> list[IndexInfo]: ...
    def set_index_options(self, name: str, options: dict[str, Any]) -> IndexInfo: ...
    def delete_index(self, name: str) -> None: ...


class DocumentStore(Protocol):
    """Documents as ingested, which tasks read by id (what a method derives from a
    document, such as an NLP analysis, is its own record: ``RecordStore``)."""

    def put_documents(self, documents: Sequence[Document]) -> None: ...
    def get_documents(self, index: str, doc_ids: Sequence[str]) -> list[Document]: ...
    def document_hashes(self, index: str) -> dict[str, str]: ...
    def delete_documents(self, index: str, doc_ids: Sequence[str]) -> None: ...


class UnitStore(Protocol):
    """Unit texts and provenance; what a search hit resolves to."""

    def put_units(self, units: Sequence[Unit]) -> None: ...
    def get_units(self, index: str, unit_ids: Sequence[str]) -> list[Unit]: ...
    def units_of_documents(self, index: str, doc_ids: Sequence[str],
                           kinds: Sequence[UnitKind] = ()) -> list[Unit]: ...
    def delete_units(self, index: str, unit_ids: Sequence[str]) -> None: ...
    def mark_embedded(self, index: str, unit_ids: Sequence[str]) -> None: ...
    def unembedded_units(self, index: str, unit_ids: Sequence[str]) -> list[str]: ...
    def count_units(self, index: str) -> dict[UnitKind, int]: ...


class EntityCatalogue(Protocol):
    """Entity → the documents mentioning it: where incremental planning looks. (What a
    method builds from shared entities is a group: ``GroupStore``.)"""

    def replace_mentions(self, index: str, doc_id: str, mentions: Sequence[EntityMention],
                         sources: Sequence[MentionSource]) -> set[str]: ...
    def delete_mentions(self, index: str, doc_ids: Sequence[str]) -> set[str]: ...
    def mentions_of_entities(self, index: str,
                             entities: Sequence[str]) -> dict[str, list[EntityMention]]: ...
    def mentions_of_documents(self, index: str,
                              doc_ids: Sequence[str]) -> dict[str, list[EntityMention]]: ...
    def title_lexicon(self, index: str) -> dict[str, list[str]]: ...


class JobStore(Protocol):
    """Job records; ``update_job`` is an atomic read-modify-write. A running job also
    keeps its fan-outs (``Dispatch``), newest last, for the reaper to re-drive, and its
    scope (what it changes, as ``Scope.as_dict`` gives it), which its steps read here:
    a task message carries the job's id, never its documents.

    ``update_job(..., once=key)`` applies its change only if no update with that key
    was applied before, and records the key in the same write (a task run settles its
    counts so, however often it runs); ``settled_keys`` says which keys were. The keys
    are kept beside the record, not in it: a job of a hundred thousand tasks would
    otherwise rewrite all their keys with every task's update.
    ``open_jobs`` lists an index's unfinished jobs in the order the store created them,
    the order they take their turns in (scheduler/writers.py)."""

    def create_job(self, job: Job) -> None: ...
    def get_job(self, job_id: str) -> Job | None: ...
    def update_job(self, job_id: str, change: Callable[[Job], None], *,
                   once: str = "") -> Job: ...
    def list_jobs(self, index: str | None = None, limit: int = 50) -> list[Job]: ...
    def open_jobs(self, index: str) -> list[Job]: ...
    def add_dispatch(self, job_id: str, dispatch: Dispatch) -> None: ...
    def last_dispatch(self, job_id: str) -> Dispatch | None: ...
    def clear_dispatches(self, job_id: str) -> None: ...
    def put_job_scope(self, job_id: str, scope: Mapping[str, Any]) -> None: ...
    def get_job_scope(self, job_id: str) -> dict[str, Any] | None: ...
    def delete_job_scope(self, job_id: str) -> None: ...
    def settled_keys(self, job_id: str, keys: Sequence[str]) -> set[str]: ...


class FailedItemStore(Protocol):
    """Work items of an index that failed for good (a document in stage 1, a bridge
    entity in stage 2), kept until a later job redoes them: what a repair re-plans.

    One record per (index, phase, item): recording an item again replaces it.
    """

    def put_failed_items(self, index: str, items: Sequence[FailedItem]) -> None: ...
    def list_failed_items(self, index: str, phase: str | None = None) -> list[FailedItem]: ...
    def clear_failed_items(self, index: str, phase: str, items: Sequence[str]) -> None: ...


class GroupStore(Protocol):
    """(namespace, group key) → the member documents and the unit ids it produced.

    A method's per-group or per-level phase writes one group per key: bridge entities
    (``"bridge"``), tree nodes, SAME_AS links, QA-pair groups. Replacing a group with no
    unit ids removes it. Members are kept sorted and unique; ``groups_of_documents`` is
    what finds the groups a changed or deleted document invalidates.
    """

    def replace_group(self, index: str, namespace: str, key: str, unit_ids: Sequence[str],
                      members: Sequence[str]) -> list[str]: ...
    def get_groups(self, index: str, namespace: str,
                   keys: Sequence[str]) -> dict[str, Group]: ...
    def list_group_keys(self, index: str, namespace: str) -> list[str]: ...
    def groups_of_documents(self, index: str, namespace: str,
                            doc_ids: Sequence[str]) -> set[str]: ...
    def namespaces_of_groups(self, index: str) -> list[str]: ...


class RecordStore(Protocol):
    """Method-owned JSON records keyed by (namespace, key): per-document analyses (the
    extractive method's spaCy output lives in namespace ``"extractive.analysis"``),
    anything a method must keep between phases. Values are JSON objects.

    Deleting documents does not touch records: the caller deletes a document's records
    with ``delete_records(index, doc_ids)`` (no namespace: in every namespace).
    ``list_record_namespaces`` names the namespaces holding a record of the index,
    sorted, so an export can read every method's records without knowing the methods.
    """

    def put_records(self, index: str, namespace: str,
                    records: Mapping[str, dict[str, Any]]) -> None: ...
    def get_records(self, index: str, namespace: str,
                    keys: Sequence[str]) -> dict[str, dict[str, Any]]: ...
    def delete_records(self, index: str, keys: Sequence[str],
                       namespace: str | None = None) -> None: ...
    def list_record_namespaces(self, index: str) -> list[str]: ...


class StateStore(IndexCatalog, DocumentStore, UnitStore, EntityCatalogue, JobStore,
                 FailedItemStore, GroupStore, RecordStore, Protocol):
    """Everything the ``state`` URL holds (SQLite embedded, Redis distributed)."""

    def close(self) -> None: ...


@runtime_checkable
class Embedder(Protocol):
    """Texts to unit-length float32 vectors (cosine = dot product)."""

    @property
    def dimension(self) -> int: ...
    @property
    def model_name(self) -> str: ...
    def embed_texts(self, texts: Sequence[str]) -> Vector: ...
    def embed_query(self, text: str) -> Vector: ...


@runtime_checkable
class Reranker(Protocol):
    """Relevance scores of candidate texts for a query, between retrieval and the answer:
    a ``/rerank`` service or a local cross-encoder (``backends/rerank/``)."""

    @property
    def model_name(self) -> str: ...

    def rerank_texts(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text, in the order given (higher: more relevant); no
        texts, no scores and no request. ``RerankError`` when no scores can be had."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class NlpAnalyzer(Protocol):
    """Sentence bounds and named entities for a batch of texts; noun chunks (which need
    the slower dependency parse) only when asked for."""

    def analyze_texts(self, texts: Sequence[str]) -> list[TextAnalysis]: ...
    def find_noun_chunks(self, texts: Sequence[str]) -> list[tuple[str, ...]]: ...


@runtime_checkable
class EventLog(Protocol):
    """The durable, ordered log of job and index events, and the webhooks fed from it.

    Ids are opaque strings the log assigns in append order; a reader resumes strictly
    after the last id it saw. The log keeps its newest ``HOPINDEX_EVENT_RETENTION``
    events: reading or waiting after an id with trimmed events after it is an
    ``EventsGoneError`` naming the oldest id kept, at the first read or any later one
    of a wait; an id older than everything kept with nothing trimmed after it resumes
    from the oldest kept event; no id (None) reads from the oldest kept; an id the log
    never issued is an ``InvalidInputError``.
    """

    def append_event(self, event_type: EventType, index: str, job_id: str,
                     data: dict[str, Any]) -> Event: ...
    def read_events(self, after_id: str | None = None, index: str | None = None,
                    limit: int = 100) -> list[Event]: ...
    def wait_events(self, after_id: str | None, index: str | None, timeout_s: float,
                    limit: int = 100) -> list[Event]: ...
    def get_event(self, event_id: str) -> Event | None: ...
    def last_event_id(self) -> str | None: ...
    def put_webhook(self, webhook: Webhook) -> Webhook: ...
    def list_webhooks(self, index: str | None = None) -> list[Webhook]: ...
    def delete_webhook(self, webhook_id: str) -> bool: ...
    def close(self) -> None: ...
