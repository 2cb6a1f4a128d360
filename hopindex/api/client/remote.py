"""``Client.connect(url)``: the client over the HTTP API, answering with the same types
and raising the same errors as the client in this process."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from hopindex.api.client.http_wire import (
    RECONNECT_S,
    RemoteUnavailableError,
    Transport,
    budget_params,
    multipart_body,
    parse_sse,
    quote,
    uploads_for,
)
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
from hopindex.api.client.protocol import DOC_ID, Client, IngestSource
from hopindex.api.client.query_stream import QueryStream
from hopindex.api.client.records import records_file, split_source
from hopindex.api.client.remote_stream import EVENT_STREAM_TYPE, RemoteQueryEvents
from hopindex.api.client.wire import JobView, QueryResultView
from hopindex.api.job_waiting import WaitUntil, wait_for_job
from hopindex.core.budget import BudgetLimits
from hopindex.core.errors import InvalidInputError
from hopindex.core.events import Event
from hopindex.core.llm_modes import LLM_MODE, parse_llm_mode
from hopindex.core.models import Job
from hopindex.core.settings import LlmMode
from hopindex.methods.base import QueryOptions, QueryResult
from hopindex.readers.options import Reading

if TYPE_CHECKING:
    from hopindex.scheduler.writers import Announce

# Each poll is a request to the server: less often than a reader of the store beside it.
POLL_S = 0.5
# The HTTP body names a method's query options ``options.NAME``; this client takes
# them as ``QueryOptions.params`` and names a bad one ``params.NAME``, as the local
# client does.
_BODY_OPTIONS, _PARAMS = "options.", "params."


def _as_param_error(exc: Exception) -> Exception:
    if not isinstance(exc, InvalidInputError) or not exc.where.startswith(_BODY_OPTIONS):
        return exc
    where = _PARAMS + exc.where.removeprefix(_BODY_OPTIONS)
    what = str(exc).removeprefix(f"{exc.where}: ")
    # from_answer builds the class it is called on.
    return cast(InvalidInputError, type(exc).from_answer(what, where=where))


def _job(data: Any) -> Job:
    return JobView.model_validate(data).to_runtime()


def _mode_params(llm_mode: LlmMode | str | None) -> dict[str, str]:
    """The ``llm_mode`` query parameter when one is given; a name that is no mode is
    refused here, before anything is sent, as the local client refuses it."""
    mode = parse_llm_mode(llm_mode)
    return {} if mode is None else {LLM_MODE: mode.value}


class RemoteIndexes:
    def __init__(self, wire: Transport, jobs: RemoteJobs) -> None:
        self._wire, self._jobs = wire, jobs

    def list_indexes(self) -> list[IndexSummary]:
        return [IndexSummary.model_validate(i)
                for i in self._wire.json_call("GET", "/v1/indexes")["indexes"]]

    def create_index(self, name: str, method: str | None = None) -> IndexDescription:
        payload = {"name": name, **({"method": method} if method is not None else {})}
        return IndexDescription.model_validate(
            self._wire.json_call("POST", "/v1/indexes", payload=payload))

    def describe_index(self, name: str, *, verify: bool = False) -> IndexDescription:
        params = {"verify": "true"} if verify else None
        return IndexDescription.model_validate(
            self._wire.json_call("GET", f"/v1/indexes/{quote(name)}", params=params))

    def delete_index(self, name: str) -> None:
        self._wire.json_call("DELETE", f"/v1/indexes/{quote(name)}")

    def get_budget(self, name: str) -> IndexBudget:
        return IndexBudget.model_validate(
            self._wire.json_call("GET", f"/v1/indexes/{quote(name)}/budget"))

    def set_budget(self, name: str, limits: BudgetLimits) -> IndexBudget:
        if not limits.is_limited:
            self._wire.json_call("DELETE", f"/v1/indexes/{quote(name)}/budget")
            return IndexBudget(index=name, budget={})
        return IndexBudget.model_validate(self._wire.json_call(
            "PUT", f"/v1/indexes/{quote(name)}/budget", payload=limits.as_dict()))

    def get_llm_mode(self, name: str) -> IndexLlmMode:
        return IndexLlmMode.model_validate(
            self._wire.json_call("GET", f"/v1/indexes/{quote(name)}/llm-mode"))

    def set_llm_mode(self, name: str, mode: LlmMode | str | None) -> IndexLlmMode:
        chosen = parse_llm_mode(mode)
        path = f"/v1/indexes/{quote(name)}/llm-mode"
        if chosen is None:
            self._wire.json_call("DELETE", path)
            return self.get_llm_mode(name)
        return IndexLlmMode.model_validate(self._wire.json_call(
            "PUT", path, payload={LLM_MODE: chosen.value}))

    # ``job_id`` and ``announce`` are the local client's (a job run in this process);
    # taken and ignored here, so that one call drives either client.
    def repair_index(self, name: str, *, wait: bool = True,
                     llm_mode: LlmMode | str | None = None, job_id: str | None = None,
                     announce: Announce | None = None) -> Job:
        job = _job(self._wire.json_call("POST", f"/v1/indexes/{quote(name)}/repair",
                                        params=_mode_params(llm_mode)))
        return self._jobs.wait_for_job(job.job_id) if wait else job

    def rebuild_index(self, name: str, *, wait: bool = True,
                      llm_mode: LlmMode | str | None = None, job_id: str | None = None,
                      announce: Announce | None = None) -> Job:
        job = _job(self._wire.json_call("POST", f"/v1/indexes/{quote(name)}/rebuild",
                                        params=_mode_params(llm_mode)))
        return self._jobs.wait_for_job(job.job_id) if wait else job

    def export_index(self, name: str, path: Path) -> TransferCounts:
        from hopindex.api.transfer import save_export

        return TransferCounts.model_validate(
            save_export(self.export_lines(name), path, name).as_dict())

    def export_lines(self, name: str) -> Iterator[str]:
        """The index's export file, line by line as the server streams it; a connection
        cut mid-way raises (``save_export`` also checks for the end record)."""
        import http.client

        with self._wire.open("GET", f"/v1/indexes/{quote(name)}/export") as resp:
            try:
                for raw in resp:
                    yield raw.decode("utf-8")
            except (http.client.HTTPException, OSError) as exc:
                raise RemoteUnavailableError(
                    0, "stream_failed", f"the export of index {name!r} from "
                    f"{self._wire.base_url} was cut short: {exc!r}") from None

    def import_index(self, path: Path) -> TransferCounts:
        with path.open("rb") as body:
            data = body.read()
        with self._wire.open("POST", "/v1/indexes/import", body=data,
                             content_type="application/x-ndjson") as resp:
            return TransferCounts.model_validate(json.loads(resp.read()))


class RemoteJobs:
    def __init__(self, wire: Transport) -> None:
        self._wire = wire

    def list_jobs(self, index: str | None = None, limit: int = 50) -> list[Job]:
        data = self._wire.json_call("GET", "/v1/jobs", params={"index": index, "limit": limit})
        return [_job(j) for j in data["jobs"]]

    def get_job(self, job_id: str) -> Job:
        return _job(self._wire.json_call("GET", f"/v1/jobs/{quote(job_id)}"))

    def wait_for_job(self, job_id: str, timeout_s: float | None = None) -> Job:
        # Polls the record, as the local client does over its job store: a job goes on
        # without this process once accepted, so waiting is only reading.
        return wait_for_job(self, job_id, timeout_s=timeout_s, until=WaitUntil.SETTLED,
                            poll_s=POLL_S)

    def cancel_job(self, job_id: str) -> Job:
        return _job(self._wire.json_call("POST", f"/v1/jobs/{quote(job_id)}/cancel"))

    def resume_job(self, job_id: str, limits: BudgetLimits | None = None) -> Job:
        return _job(self._wire.json_call("POST", f"/v1/jobs/{quote(job_id)}/resume",
                                         payload=(limits or BudgetLimits()).as_dict()))


class RemoteEvents:
    def __init__(self, wire: Transport) -> None:
        self._wire = wire

    def iterate_events(self, index: str | None = None, after_id: str | None = None, *,
                       follow: bool = False) -> Iterator[Event]:
        """With ``follow``, a dropped connection is opened again from the last id seen
        (Last-Event-ID). A cursor the log's retention trimmed past, at the start or
        while following (the stream's ``gap`` event), raises ``EventsGoneError``."""
        cursor = after_id
        while True:
            headers = {"Accept": "text/event-stream"}
            if cursor is not None:
                headers["Last-Event-ID"] = cursor
            try:
                with self._wire.open("GET", "/v1/events", headers=headers,
                                     params={"index": index,
                                             "mode": "follow" if follow else "backlog"},
                                     names={"Last-Event-ID": "from"}) as resp:
                    for event in parse_sse(resp):
                        cursor = event.event_id
                        yield event
            except (RemoteUnavailableError, OSError, TimeoutError):
                if not follow:
                    raise
            if not follow:
                return
            time.sleep(RECONNECT_S)  # before reconnecting to a server that dropped us


class RemoteWebhooks:
    def __init__(self, wire: Transport) -> None:
        self._wire = wire

    def add_webhook(self, index: str, url: str, secret: str | None = None) -> WebhookInfo:
        payload = {"index": index, "url": url,
                   **({"secret": secret} if secret is not None else {})}
        return WebhookInfo.model_validate(
            self._wire.json_call("POST", "/v1/webhooks", payload=payload))

    def list_webhooks(self, index: str | None = None) -> list[WebhookInfo]:
        hooks = self._wire.json_call("GET", "/v1/webhooks", params={"index": index})
        return [WebhookInfo.model_validate(h) for h in hooks["webhooks"]]

    def remove_webhook(self, webhook_id: str) -> None:
        self._wire.json_call("DELETE", f"/v1/webhooks/{quote(webhook_id)}")


class RemoteOperations:
    def __init__(self, wire: Transport) -> None:
        self._wire = wire

    def list_operations(self, method: str | None = None) -> list[OperationInfo]:
        data = self._wire.json_call("GET", "/v1/operations", params={"method": method})
        return [OperationInfo.model_validate(o) for o in data["operations"]]

    def run_operation(self, index: str, name: str,
                      params: Mapping[str, str] | None = None) -> Any:
        return self._wire.json_call(
            "POST", f"/v1/indexes/{quote(index)}/operations/{quote(name)}",
            payload=dict(params or {}))


class RemoteClient(Client):
    """The client of a hopindex server at ``base_url``."""

    @property
    def is_remote(self) -> bool:
        return True

    def __init__(self, base_url: str, api_key: str = "", timeout_s: float | None = None,
                 ) -> None:
        self._wire = (Transport(base_url, api_key) if timeout_s is None
                      else Transport(base_url, api_key, timeout_s))
        self.base_url = self._wire.base_url
        self._jobs = RemoteJobs(self._wire)
        self._indexes = RemoteIndexes(self._wire, self.jobs)
        self._events = RemoteEvents(self._wire)
        self._webhooks = RemoteWebhooks(self._wire)
        self._operations = RemoteOperations(self._wire)

    @property
    def indexes(self) -> RemoteIndexes:
        return self._indexes

    @property
    def jobs(self) -> RemoteJobs:
        return self._jobs

    @property
    def events(self) -> RemoteEvents:
        return self._events

    @property
    def webhooks(self) -> RemoteWebhooks:
        return self._webhooks

    @property
    def operations(self) -> RemoteOperations:
        return self._operations

    def close(self) -> None:
        """Nothing held between requests: each opens its own connection."""

    @property
    def runs_jobs_here(self) -> bool:
        """False: the server runs every job (as ``LocalClient.runs_jobs_here``)."""
        return False

    def embedder_to_prepare(self) -> None:
        """None: the server's embedder is prepared on its own machine
        (``LocalClient.embedder_to_prepare``)."""
        return

    def ingest(self, index: str, source: IngestSource, *, method: str | None = None,
               wait: bool = True, limits: BudgetLimits | None = None,
               reading: Reading | None = None, llm_mode: LlmMode | str | None = None,
               job_id: str | None = None, announce: Announce | None = None) -> Job:
        params = {"method": method, "on_error": "skip",
                  **budget_params(limits or BudgetLimits()), **_mode_params(llm_mode)}
        job = _job(self._upload(index, source, params, reading or Reading()))
        return self.jobs.wait_for_job(job.job_id) if wait else job

    def plan_ingest(self, index: str, source: IngestSource, *,
                    method: str | None = None, reading: Reading | None = None,
                    llm_mode: LlmMode | str | None = None) -> IngestPlanView:
        params = {"method": method, "on_error": "skip", "dry_run": "true",
                  **_mode_params(llm_mode)}
        return IngestPlanView.model_validate(
            self._upload(index, source, params, reading or Reading()))

    def _upload(self, index: str, source: IngestSource, params: dict[str, Any],
                reading: Reading) -> Any:
        """The files go up under their paths inside the folders named, those ``reading``
        selects only; the server reads them with the same choices."""
        paths, records = split_source(source)
        params = {**params, **reading.as_params()}
        if records:
            with records_file(records) as path:
                body, content_type = multipart_body(uploads_for([path]))
        else:
            body, content_type = multipart_body(uploads_for(paths, reading))
        with self._wire.open("POST", f"/v1/indexes/{quote(index)}/documents", params=params,
                             body=body, content_type=content_type) as resp:
            return json.loads(resp.read())

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
        options = options or QueryOptions()
        payload: dict[str, Any] = {"question": question, "k": k,
                                   "fusion": options.fusion.value}
        if method is not None:
            payload["method"] = method
        if options.retrieval is not None:
            payload["retrieval"] = options.retrieval.value
        if options.candidates is not None:
            payload["candidates"] = options.candidates
        for name in ("dense_weight", "keyword_weight"):
            if getattr(options, name) != 1.0:
                payload[name] = getattr(options, name)
        if options.params:
            payload["options"] = dict(options.params)
        path = f"/v1/indexes/{quote(index)}/query"
        try:
            if stream:
                return RemoteQueryEvents(self._wire.open(
                    "POST", path, body=json.dumps({**payload, "stream": True}).encode(),
                    content_type="application/json",
                    headers={"Accept": EVENT_STREAM_TYPE}), _as_param_error)
            answer = self._wire.json_call("POST", path, payload=payload)
        except InvalidInputError as exc:
            raise _as_param_error(exc) from None
        return QueryResultView.model_validate(answer).to_runtime()

    def delete_documents(self, index: str, doc_ids: Sequence[str], *, wait: bool = True,
                         job_id: str | None = None, announce: Announce | None = None) -> Job:
        job = _job(self._wire.json_call("DELETE", f"/v1/indexes/{quote(index)}/documents",
                                        payload={"ids": list(doc_ids)}))
        return self.jobs.wait_for_job(job.job_id) if wait else job

    def get_document(self, index: str, doc_id: str) -> DocumentView:
        # A query parameter, not a path segment: ids are free text, '/' and '#' in them.
        return DocumentView.model_validate(self._wire.json_call(
            "GET", f"/v1/indexes/{quote(index)}/documents", params={"id": doc_id},
            names={"id": DOC_ID}))
