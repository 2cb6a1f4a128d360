"""``Client.local()``: the client over the service in this process.

Every rule a front door used to keep for itself lives here or below (the service,
the scheduler), so the HTTP API, which serves this client's results, and the CLI,
which drives either client, answer alike: an index created twice is an
``IndexExistsError``, a query option its method does not take an
``InvalidInputError`` naming it, a finished job cancelled a ``JobFinishedError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from hopindex.api.client.local_parts import LocalEvents, LocalOperations, LocalWebhooks
from hopindex.api.client.models import (
    DocumentView,
    IndexBudget,
    IndexDescription,
    IndexLlmMode,
    IndexSummary,
    IngestPlanView,
    TransferCounts,
)
from hopindex.api.client.protocol import DOC_ID, Client, IngestSource
from hopindex.api.client.records import read_records, split_source
from hopindex.core.budget import BudgetLimits
from hopindex.core.errors import IndexExistsError, InvalidInputError, NotFoundError
from hopindex.core.ids import validate_index_name
from hopindex.core.llm_modes import parse_llm_mode
from hopindex.core.settings import LlmMode
from hopindex.methods.base import QueryOptions, QueryResult
from hopindex.readers.options import Reading

# Named here too: callers import the client's parts from this module.
__all__ = ["LocalClient", "LocalEvents", "LocalIndexes", "LocalJobs", "LocalOperations",
           "LocalWebhooks"]

if TYPE_CHECKING:
    from hopindex.api.client.query_stream import QueryStream
    from hopindex.api.service import Hopindex
    from hopindex.backends.embedder.fast_start import PreparesQueries
    from hopindex.core.models import Job
    from hopindex.readers import ReadResult
    from hopindex.scheduler.writers import Announce, WaitPolicy


def _policy(wait: bool) -> WaitPolicy:
    from hopindex.scheduler.writers import WaitPolicy

    # Not waiting for the job means not waiting for its turn either: behind another job
    # of its index it is refused at once (IndexBusyError), as a server without workers
    # refuses it.
    return WaitPolicy.WAIT if wait else WaitPolicy.NO_WAIT


class LocalIndexes:
    def __init__(self, client: LocalClient) -> None:
        self._client = client

    @property
    def _service(self) -> Hopindex:
        return self._client.service

    def list_indexes(self) -> list[IndexSummary]:
        from hopindex.api.client.views import index_view

        return [IndexSummary.model_validate(index_view(i))
                for i in self._service.list_indexes()]

    def create_index(self, name: str, method: str | None = None) -> IndexDescription:
        from hopindex.scheduler.submit import ensure_index

        service = self._service
        if service.index_info(name) is not None:
            raise IndexExistsError(f"index {name!r} exists; ingest into it, or delete it "
                                   "first")
        ensure_index(service.runtime, name, method)
        return self.describe_index(name)

    def describe_index(self, name: str, *, verify: bool = False) -> IndexDescription:
        from hopindex.api.client.views import describe_index

        return IndexDescription.model_validate(describe_index(self._service, name,
                                                              verify=verify))

    def delete_index(self, name: str) -> None:
        self._service.delete_index(name)

    def get_budget(self, name: str) -> IndexBudget:
        from hopindex.api.client.views import index_budget

        return IndexBudget.model_validate(index_budget(self._service, name))

    def set_budget(self, name: str, limits: BudgetLimits) -> IndexBudget:
        from hopindex.api.client.views import set_index_budget

        return IndexBudget.model_validate(set_index_budget(self._service, name, limits))

    def get_llm_mode(self, name: str) -> IndexLlmMode:
        from hopindex.api.client.views import index_llm_mode

        return IndexLlmMode.model_validate(index_llm_mode(self._service, name))

    def set_llm_mode(self, name: str, mode: LlmMode | str | None) -> IndexLlmMode:
        from hopindex.api.client.views import set_index_llm_mode

        return IndexLlmMode.model_validate(set_index_llm_mode(self._service, name, mode))

    def repair_index(self, name: str, *, wait: bool = True,
                     llm_mode: LlmMode | str | None = None, job_id: str | None = None,
                     announce: Announce | None = None) -> Job:
        job = self._service.repair_index(name, job_id=job_id, wait=_policy(wait),
                                         announce=announce, llm_mode=parse_llm_mode(llm_mode))
        return self._client.settled(job, wait)

    def rebuild_index(self, name: str, *, wait: bool = True,
                      llm_mode: LlmMode | str | None = None, job_id: str | None = None,
                      announce: Announce | None = None) -> Job:
        job = self._service.rebuild_index(name, job_id=job_id, wait=_policy(wait),
                                          announce=announce, llm_mode=parse_llm_mode(llm_mode))
        return self._client.settled(job, wait)

    def export_index(self, name: str, path: Path) -> TransferCounts:
        from hopindex.api.transfer import export_index

        self._service.require_index(name)
        return TransferCounts.model_validate(
            export_index(self._service.backends, name, path).as_dict())

    def export_records(self, name: str) -> Iterator[dict[str, Any]]:
        """The export's records one by one, as ``export_index`` writes them (what the
        HTTP API streams)."""
        from hopindex.api.transfer import IndexExport

        self._service.require_index(name)
        return IndexExport(self._service.backends, name).records()

    def import_index(self, path: Path) -> TransferCounts:
        from hopindex.api.transfer import import_index

        return TransferCounts.model_validate(
            import_index(self._service.backends, path).as_dict())

    def export_name(self, path: Path) -> str:
        """The name of the index an export file holds (its header's), which importing it
        creates; a file that does not start with a header is an ``InvalidInputError``
        naming where (what the HTTP API checks a key's indexes against)."""
        from hopindex.api import transfer_format as fmt
        from hopindex.api import transfer_v1 as v1

        with fmt.open_text(path, "r") as handle:
            records = fmt.read_records(handle, path, fmt.RECORD_TYPES + v1.RECORD_TYPES)
            first = next(records, None)
        if first is None:
            raise InvalidInputError("empty file", where=str(path))
        where, record = first
        try:
            info, _ = fmt.header_info(record, where, (v1.VERSION, fmt.VERSION))
        except (KeyError, TypeError, ValueError) as exc:
            # A header of the right format with a field missing or of the wrong type.
            raise InvalidInputError(f"malformed header: {exc!r}", where=where) from None
        return validate_index_name(info.name)


class LocalJobs:
    def __init__(self, client: LocalClient) -> None:
        self._client = client

    def list_jobs(self, index: str | None = None, limit: int = 50) -> list[Job]:
        return self._client.service.list_jobs(index, limit)

    def get_job(self, job_id: str) -> Job:
        return self._client.service.get_job(job_id)

    def find_job(self, job_id: str) -> Job | None:
        """The job, or None (what a progress display polls)."""
        return self._client.service.backends.state.get_job(job_id)

    def wait_for_job(self, job_id: str, timeout_s: float | None = None) -> Job:
        from hopindex.api.job_waiting import WaitUntil, wait_for_job

        return wait_for_job(self._client.service.backends.state, job_id, timeout_s=timeout_s,
                            until=WaitUntil.SETTLED)

    def cancel_job(self, job_id: str, *, reason: str | None = None) -> Job:
        """``reason``: what the record says instead of "cancelled by request", when the
        process stops the job for a reason of its own (a server shutting down)."""
        return self._client.service.cancel_job(job_id, reason=reason)

    def resume_job(self, job_id: str, limits: BudgetLimits | None = None) -> Job:
        limits = limits or BudgetLimits()
        return self._client.service.resume_job(job_id, max_llm_tokens=limits.max_llm_tokens,
                                               max_cost=limits.max_cost)


class LocalClient(Client):
    """The service in this process behind the client's interface."""

    @property
    def is_remote(self) -> bool:
        return False

    def __init__(self, service: Hopindex) -> None:
        self.service = service
        self.settings = service.settings
        self._indexes = LocalIndexes(self)
        self._jobs = LocalJobs(self)
        self._events = LocalEvents(self)
        self._webhooks = LocalWebhooks(self)
        self._operations = LocalOperations(self)

    @property
    def indexes(self) -> LocalIndexes:
        return self._indexes

    @property
    def jobs(self) -> LocalJobs:
        return self._jobs

    @property
    def events(self) -> LocalEvents:
        return self._events

    @property
    def webhooks(self) -> LocalWebhooks:
        return self._webhooks

    @property
    def operations(self) -> LocalOperations:
        return self._operations

    def close(self) -> None:
        self.service.close()

    @property
    def runs_jobs_here(self) -> bool:
        """True when a job runs inside the call that submits it (no broker)."""
        return not self.service.runs_on_workers

    def embedder_to_prepare(self) -> PreparesQueries | None:
        """The query embedder when it can export its model for fast starts
        (``hopindex prepare-queries``); None when it has nothing to prepare."""
        from hopindex.backends.embedder.fast_start import PreparesQueries

        embedder = self.service.backends.embedder
        return embedder if isinstance(embedder, PreparesQueries) else None

    def warm_up_queries(self) -> None:
        """Load the query embedder's model now, so that the next query's time is its own."""
        self.service.backends.embedder.embed_query("warm up")

    def check_limits(self, limits: BudgetLimits) -> None:
        """Refuse limits this service cannot count before any work starts: a ``max_cost``
        with no LLM prices set is an ``InvalidInputError`` naming it."""
        from hopindex.scheduler.submit import check_budget

        check_budget(self.service.runtime, limits)

    def store_probes(self) -> dict[str, Callable[[], object]]:
        """One cheap read of each store this client works on, by store, for a readiness
        check (each raises when its store does not answer)."""
        backends = self.service.backends
        return {"state": backends.state.list_indexes, "events": backends.events.last_event_id}

    def settled(self, job: Job, wait: bool) -> Job:
        """``job`` once it ends or pauses, when asked to wait and workers run it."""
        if wait and self.service.runs_on_workers and not job.state.is_final:
            return self.jobs.wait_for_job(job.job_id)
        return job

    def read_source(self, source: IngestSource, reading: Reading | None = None) -> ReadResult:
        from hopindex.readers import read_options, read_paths

        paths, records = split_source(source)
        if records:
            return read_records(records, max_document_bytes=self.settings.max_document_bytes)
        return read_paths(paths, options=read_options(self.settings, reading))

    def ingest(self, index: str, source: IngestSource, *, method: str | None = None,
               wait: bool = True, limits: BudgetLimits | None = None,
               reading: Reading | None = None, llm_mode: LlmMode | str | None = None,
               job_id: str | None = None, announce: Announce | None = None) -> Job:
        validate_index_name(index)
        mode = parse_llm_mode(llm_mode)  # refused before any file is read
        read = self.read_source(source, reading)
        return self.ingest_read(index, read, method=method, wait=wait, limits=limits,
                                llm_mode=mode, job_id=job_id, announce=announce)

    def ingest_read(self, index: str, read: ReadResult, *, method: str | None = None,
                    wait: bool = True, limits: BudgetLimits | None = None,
                    llm_mode: LlmMode | None = None, job_id: str | None = None,
                    announce: Announce | None = None) -> Job:
        """``ingest`` of documents already read (the HTTP API reads its upload)."""
        from hopindex.api.client.views import ingest_budget

        budget = ingest_budget(self.service, index, limits or BudgetLimits())
        job = self.service.ingest_documents(index, read.documents, read.errors, method=method,
                                            job_id=job_id, budget=budget, wait=_policy(wait),
                                            announce=announce, llm_mode=llm_mode)
        return self.settled(job, wait)

    def plan_ingest(self, index: str, source: IngestSource, *,
                    method: str | None = None, reading: Reading | None = None,
                    llm_mode: LlmMode | str | None = None) -> IngestPlanView:
        validate_index_name(index)
        mode = parse_llm_mode(llm_mode)
        read = self.read_source(source, reading)
        return self.plan_read(index, read, method=method, llm_mode=mode)

    def plan_read(self, index: str, read: ReadResult, *, method: str | None = None,
                  llm_mode: LlmMode | None = None) -> IngestPlanView:
        plan = self.service.plan_ingest_documents(index, read.documents, read.errors,
                                                  method=method, llm_mode=llm_mode)
        return IngestPlanView.model_validate(plan.as_dict())

    @overload
    def query(self, index: str, question: str, *, method: str | None = None, k: int = 10,
              options: QueryOptions | None = None, stream: Literal[False] = False
              ) -> QueryResult: ...

    @overload
    def query(self, index: str, question: str, *, method: str | None = None, k: int = 10,
              options: QueryOptions | None = None, stream: Literal[True]) -> QueryStream: ...

    def query(self, index: str, question: str, *, method: str | None = None, k: int = 10,
              options: QueryOptions | None = None, stream: bool = False
              ) -> QueryResult | QueryStream:
        from dataclasses import replace

        options = replace(options or QueryOptions(), k=k)
        if not stream:
            return self.service.query(index, question, method=method, options=options)
        from hopindex.api.client.query_stream import QueryEvents

        return QueryEvents(lambda listener: self.service.query(
            index, question, method=method, options=options, listener=listener))

    def delete_documents(self, index: str, doc_ids: Sequence[str], *, wait: bool = True,
                         job_id: str | None = None, announce: Announce | None = None) -> Job:
        job = self.service.delete_documents(index, doc_ids, job_id=job_id, wait=_policy(wait),
                                            announce=announce)
        return self.settled(job, wait)

    def get_document(self, index: str, doc_id: str) -> DocumentView:
        from hopindex.api.client.views import document_view

        # In the order a server checks them: the index name, the id, then what exists.
        validate_index_name(index)
        if not doc_id.strip():  # an ingest strips ids, so a blank one names none
            raise InvalidInputError("must not be empty", where=DOC_ID)
        self.service.require_index(index)
        found = self.service.get_documents(index, [doc_id])
        if not found:
            raise NotFoundError(f"no document {doc_id!r} in index {index!r}", where=DOC_ID)
        return DocumentView.model_validate(document_view(found[0]))
