"""The one interface every front door and every application drives hopindex through.

Two implementations answer it alike (a congruence suite holds them equal):
``Client.local(...)`` runs the service in this process, ``Client.connect(url, ...)``
speaks the HTTP API. Same method names, same arguments, same result types, same
errors (``core/errors.py``: each carries its code, HTTP status and exit code).

The operations are grouped the way users look for them: ingest, query, reading a
document and deleting documents on the client itself; the rest under
``client.indexes``, ``client.jobs``, ``client.webhooks``, ``client.events`` and
``client.operations`` (what a method registers for its indexes).

The client is synchronous. The HTTP server runs the local client's calls on its
blocking executor, and an application wanting concurrency runs calls on threads;
an async twin would double every signature for no caller that needs it today.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, overload

from hopindex.core.budget import BudgetLimits
from hopindex.core.settings import LlmMode
from hopindex.readers.options import Reading

if TYPE_CHECKING:
    from hopindex.api.client.models import (
        DocumentView,
        IndexBudget,
        IndexDescription,
        IndexLlmMode,
        IndexSummary,
        IngestPlanView,
        OperationInfo,
        TransferCounts,
        WebhookInfo,
    )
    from hopindex.api.client.query_stream import QueryStream
    from hopindex.core.events import Event
    from hopindex.core.models import Job
    from hopindex.core.settings import Settings
    from hopindex.methods.base import QueryOptions, QueryResult

# How ``Client.local`` and ``Client.connect`` open a client: filled by the package
# (``hopindex/api/client/__init__.py``) with ``opening.open_local`` and ``open_remote``.
# The implementations subclass ``Client``, so this module cannot import them.
OPENERS: dict[str, Callable[..., Any]] = {}

# What ``get_document``'s refusals name as ``where``: its argument, the document's id
# (the HTTP API's query parameter ``id``, which the remote client names so again).
DOC_ID = "doc_id"

# What ``ingest`` takes: paths of files and folders, or records already in memory
# (``{"id", "title", "text", "metadata"}`` mappings, as a JSONL line holds).
IngestSource = Sequence[Path | str] | Sequence[Mapping[str, Any]]


class Indexes(Protocol):
    """``client.indexes``: the indexes and what each holds."""

    def list_indexes(self) -> list[IndexSummary]: ...

    def create_index(self, name: str, method: str | None = None) -> IndexDescription:
        """An empty index built with ``method`` (default: the service's default index
        method); an index of that name already there is a ``ConflictError``."""
        ...

    def describe_index(self, name: str, *, verify: bool = False) -> IndexDescription:
        """What the index holds, its status and what it is missing; ``verify`` also
        reads every document for text its units were not built from (slower)."""
        ...

    def delete_index(self, name: str) -> None:
        """Drop the index from every store; refused while one of its jobs runs."""
        ...

    def get_budget(self, name: str) -> IndexBudget: ...

    def set_budget(self, name: str, limits: BudgetLimits) -> IndexBudget:
        """The budget later jobs of the index get when they give none (no limits:
        the default is removed)."""
        ...

    def get_llm_mode(self, name: str) -> IndexLlmMode: ...

    def set_llm_mode(self, name: str, mode: LlmMode | str | None) -> IndexLlmMode:
        """The LLM mode later jobs of the index run in when they name none (None: the
        index's default is removed, the server's ``HOPINDEX_LLM_MODE`` applies)."""
        ...

    def repair_index(self, name: str, *, wait: bool = True,
                     llm_mode: LlmMode | str | None = None) -> Job:
        """Redo the index's outstanding work (documents not fully indexed, items
        failed for good) with no new input; ``llm_mode`` as ``Client.ingest``'s."""
        ...

    def rebuild_index(self, name: str, *, wait: bool = True,
                      llm_mode: LlmMode | str | None = None) -> Job:
        """Build again the levels phases the index's method builds only on request;
        ``llm_mode`` as ``Client.ingest``'s."""
        ...

    def export_index(self, name: str, path: Path) -> TransferCounts:
        """Write the index (documents, units with their vectors, the method's records)
        to one JSONL file at ``path``, here."""
        ...

    def import_index(self, path: Path) -> TransferCounts:
        """Load an export file into a new index of the name it carries."""
        ...


class Jobs(Protocol):
    """``client.jobs``: ingest, delete, repair and rebuild jobs."""

    def list_jobs(self, index: str | None = None, limit: int = 50) -> list[Job]: ...

    def get_job(self, job_id: str) -> Job:
        """The job; an unknown id is a ``NotFoundError``."""
        ...

    def wait_for_job(self, job_id: str, timeout_s: float | None = None) -> Job:
        """The job once it ends or pauses on its budget (or as it is at the timeout)."""
        ...

    def cancel_job(self, job_id: str) -> Job: ...

    def resume_job(self, job_id: str, limits: BudgetLimits | None = None) -> Job:
        """Continue a job paused on its LLM budget; limits given replace the job's."""
        ...


class Events(Protocol):
    """``client.events``: the event log (job started, progress, index ready, ...)."""

    def iterate_events(self, index: str | None = None, after_id: str | None = None, *,
                       follow: bool = False) -> Iterator[Event]:
        """Events after ``after_id`` (None: from the oldest kept), oldest first; with
        ``follow``, then each new one as it comes, until the caller stops reading."""
        ...


class Webhooks(Protocol):
    """``client.webhooks``: signed deliveries of an index's events to a URL."""

    def add_webhook(self, index: str, url: str, secret: str | None = None) -> WebhookInfo:
        """Register ``url``; the answer carries the signing secret, the only time it is
        shown (none given: one is made)."""
        ...

    def list_webhooks(self, index: str | None = None) -> list[WebhookInfo]: ...

    def remove_webhook(self, webhook_id: str) -> None: ...


class Operations(Protocol):
    """``client.operations``: what index methods register for their indexes (a
    kgbridge index's SAME_AS links, listed and rejected by hand)."""

    def list_operations(self, method: str | None = None) -> list[OperationInfo]: ...

    def run_operation(self, index: str, name: str,
                      params: Mapping[str, str] | None = None) -> Any:
        """Run operation ``name`` of the index's method with ``params``; the answer is
        the operation's JSON value."""
        ...


class Client(Protocol):
    """hopindex, from Python: ``Client.local()`` in this process, or
    ``Client.connect(url, api_key=...)`` to a server. Use it as a context manager, or
    call ``close()``."""

    @property
    def indexes(self) -> Indexes: ...

    @property
    def jobs(self) -> Jobs: ...

    @property
    def events(self) -> Events: ...

    @property
    def webhooks(self) -> Webhooks: ...

    @property
    def operations(self) -> Operations: ...

    @property
    def is_remote(self) -> bool:
        """True when a server does the work (``connect``, or ``local`` on a data dir a
        server owns)."""
        ...

    def ingest(self, index: str, source: IngestSource, *, method: str | None = None,
               wait: bool = True, limits: BudgetLimits | None = None,
               reading: Reading | None = None, llm_mode: LlmMode | str | None = None
               ) -> Job:
        """Ingest files, folders or records into ``index`` (created on first use with
        ``method``). Bad records and files fail alone and are listed on the job.
        ``wait``: return once the job ends or pauses on its budget, else as soon as it
        is accepted. ``limits`` cap the job's LLM spend, replacing the index default's
        limits. ``reading``: how PDF, HTML, DOCX and Markdown files split into
        documents (by section, page or file) and which files of a folder are read.
        ``llm_mode``: ``sync`` or ``batch`` (the provider's Batch API: about half the
        price, results within its completion window); None: the index's default mode,
        else the server's. Another value is an ``InvalidInputError`` naming
        ``llm_mode``."""
        ...

    def plan_ingest(self, index: str, source: IngestSource, *,
                    method: str | None = None, reading: Reading | None = None,
                    llm_mode: LlmMode | str | None = None) -> IngestPlanView:
        """What ``ingest`` would do and cost (at the synchronous and the batch
        prices, and in which mode it would run), with no LLM call and no write."""
        ...

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
        """Ranked passages with provenance (``.passages``), the answer when the method
        gives one (``.answer``), the decision trace, usage and latency. ``options``
        carries the rest (retrieval, fusion, candidates, method params, ``rerank``);
        its ``k`` is replaced by ``k``.

        ``stream=True``: the query's events as they come (``query_stream.py``):
        ``passages``, the answer's text in ``answer.delta`` events, ``usage``, then
        ``done`` or ``degraded`` with the whole result. A failure raises, before the
        first event or from the iterator; close the stream (or leave its ``with``
        block) to stop the answer call."""
        ...

    def delete_documents(self, index: str, doc_ids: Sequence[str], *,
                         wait: bool = True) -> Job: ...

    def get_document(self, index: str, doc_id: str) -> DocumentView:
        """Document ``doc_id`` of ``index`` as stored: title, text, content hash, the
        metadata it was given, and (read from a PDF, HTML, DOCX or Markdown file) its
        citation: file, pages and section. An unknown index or id is a
        ``NotFoundError``, the id's with ``where`` ``doc_id``; a blank id an
        ``InvalidInputError`` naming ``doc_id``."""
        ...

    def close(self) -> None: ...

    # Implemented here: both clients subclass Client, and a context closes either alike.
    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @staticmethod
    def local(data_dir: Path | str | None = None, *, settings: Settings | None = None,
              through_server: bool = True) -> Client:
        """The service in this process, over ``settings`` (default: read from the
        environment) with ``data_dir`` replacing its data folder. When a running
        ``hopindex serve`` owns that data dir, the client goes through it instead
        (``through_server=False`` refuses with ``DataDirInUseError``), so local code
        never fights a server for the embedded engines."""
        opened: Client = OPENERS["local"](data_dir, settings=settings,
                                          through_server=through_server)
        return opened

    @staticmethod
    def connect(url: str, *, api_key: str = "", timeout_s: float | None = None) -> Client:
        """A client of the HTTP API at ``url``, sending ``api_key`` as a bearer token."""
        opened: Client = OPENERS["connect"](url, api_key=api_key, timeout_s=timeout_s)
        return opened
