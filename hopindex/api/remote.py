"""A client of the HTTP API (standard library only): what the CLI's remote mode
(``hopindex --api URL``) sends instead of opening backends itself.

Answers come back as the same objects the service returns (Job, QueryResult,
Event), so the CLI renders them the same way. Error answers become
``RemoteApiError`` carrying the server's status, code and message.
"""

from __future__ import annotations

import http.client
import json
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hopindex.core.budget import BudgetLimits
from hopindex.core.errors import HopindexError, InvalidInputError
from hopindex.core.events import Event
from hopindex.core.models import Job, JobState
from hopindex.methods.base import (
    Degradation,
    QueryOptions,
    QueryResult,
    QueryUsage,
    QueryWarning,
    RankedPassage,
)

DEFAULT_TIMEOUT_S = 120.0
RECONNECT_S = 1.0
_RETRYABLE_STATUSES = (429, 502, 503, 504)


class RemoteApiError(HopindexError):
    """The API answered with an error (or could not be reached: ``status`` 0)."""

    def __init__(self, status: int, code: str, message: str, *, field: str | None = None
                 ) -> None:
        self.status, self.code, self.field = status, code, field
        super().__init__(f"{message} (HTTP {status} {code})" if status else message)


class RemoteUnavailableError(RemoteApiError):
    """The server is busy, unreachable or failing; trying again later may work."""

    retryable = True


@dataclass(frozen=True, slots=True)
class Upload:
    name: str  # the name the server reads it under (its suffix picks the reader)
    path: Path


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def uploads_for(paths: Sequence[Path]) -> list[Upload]:
    """Files to send for CLI paths: a file under its own name, a folder's files under
    their path inside it (text documents take that as their id, as when read locally)."""
    found: list[Upload] = []
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.rglob("*")
                           if p.is_file() and not _hidden(p.relative_to(path)))
            found.extend(Upload(p.relative_to(path).as_posix(), p) for p in files)
        elif path.is_file():
            found.append(Upload(path.name, path))
        else:
            raise InvalidInputError("no such file or directory", where=str(path))
    names = [u.name for u in found]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise InvalidInputError(f"two inputs are named {clashes[0]!r}; the server reads "
                                "uploads by name, so send them in separate ingests",
                                where="paths")
    return found


def multipart_body(uploads: Sequence[Upload]) -> tuple[bytes, str]:
    boundary = "hopindex-" + secrets.token_hex(16)
    parts: list[bytes] = []
    for upload in uploads:
        name = upload.name.replace('"', "%22")
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                     f'filename="{name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
                     .encode())
        parts.append(upload.path.read_bytes())
        parts.append(b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def query_result_from_dict(data: dict[str, Any]) -> QueryResult:
    usage_data = data.get("usage") or {}
    usage = QueryUsage(**{k: v for k, v in usage_data.items()
                          if k in QueryUsage.__dataclass_fields__})
    passages = [RankedPassage(rank=p["rank"], doc_id=p["doc_id"], title=p["title"],
                              text=p["text"], score=p["score"], via_unit_id=p["via"]["unit_id"],
                              via_kind=p["via"]["kind"], via_text=p["via"].get("text", ""))
                for p in data["passages"]]
    return QueryResult(question=data["question"], method=data["method"], index=data["index"],
                       passages=passages, answer=data.get("answer"),
                       trace=data.get("trace") or {}, usage=usage,
                       latency_s=float(data.get("latency_s", 0.0)),
                       degraded=[Degradation.from_dict(d) for d in data.get("degraded") or []],
                       answer_truncated=bool(data.get("answer_truncated", False)),
                       embedder_load_s=float(data.get("embedder_load_s", 0.0)),
                       warnings=[QueryWarning.from_dict(w) for w in data.get("warnings") or []])


class ApiClient:
    """``ApiClient("http://host:8080", api_key)``: one method per API operation."""

    def __init__(self, base_url: str, api_key: str = "",
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._timeout_s = timeout_s

    def _open(self, method: str, path: str, *, params: dict[str, Any] | None = None,
              body: bytes | None = None, content_type: str | None = None,
              headers: dict[str, str] | None = None, timeout_s: float | None = None) -> Any:
        query = urllib.parse.urlencode({k: v for k, v in (params or {}).items()
                                        if v is not None})
        url = f"{self.base_url}{path}" + (f"?{query}" if query else "")
        request = urllib.request.Request(url, data=body, method=method,
                                         headers=dict(headers or {}))
        if content_type:
            request.add_header("Content-Type", content_type)
        if self._api_key:
            request.add_header("Authorization", f"Bearer {self._api_key}")
        try:
            return urllib.request.urlopen(request, timeout=timeout_s or self._timeout_s)
        except urllib.error.HTTPError as exc:
            raise _error_from(exc) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RemoteUnavailableError(0, "unreachable", f"cannot reach the hopindex API at "
                                                           f"{self.base_url}: {reason}") from None

    def _json(self, method: str, path: str, *, params: dict[str, Any] | None = None,
              payload: object = None) -> Any:
        body = None if payload is None else json.dumps(payload).encode()
        with self._open(method, path, params=params, body=body,
                        content_type="application/json" if body is not None else None) as resp:
            data = resp.read()
        return json.loads(data) if data else None

    # -- documents and jobs -----------------------------------------------------------
    def ingest_paths(self, index: str, paths: Sequence[Path], method: str | None = None,
                     limits: BudgetLimits | None = None) -> Job:
        """Upload files and folders; bad records are listed on the job, as locally.
        ``limits`` replace those of the index's default budget (the server merges)."""
        params = {"method": method, "on_error": "skip",
                  **_budget_params(limits or BudgetLimits())}
        return Job.from_dict(self._upload(index, paths, params))

    def plan_ingest_paths(self, index: str, paths: Sequence[Path],
                          method: str | None = None) -> dict[str, Any]:
        """The dry run of ``ingest_paths``: the server's plan (``IngestPlan`` fields);
        bad records are listed in it, as locally."""
        plan: dict[str, Any] = self._upload(index, paths, {"method": method, "on_error": "skip",
                                                           "dry_run": "true"})
        return plan

    def _upload(self, index: str, paths: Sequence[Path], params: dict[str, Any]) -> Any:
        body, content_type = multipart_body(uploads_for(paths))
        with self._open("POST", f"/v1/indexes/{_quote(index)}/documents", params=params,
                        body=body, content_type=content_type) as resp:
            return json.loads(resp.read())

    def delete_documents(self, index: str, doc_ids: Sequence[str]) -> Job:
        return Job.from_dict(self._json("DELETE", f"/v1/indexes/{_quote(index)}/documents",
                                        payload={"ids": list(doc_ids)}))

    def repair_index(self, index: str) -> Job:
        return Job.from_dict(self._json("POST", f"/v1/indexes/{_quote(index)}/repair"))

    def rebuild_index(self, index: str) -> Job:
        return Job.from_dict(self._json("POST", f"/v1/indexes/{_quote(index)}/rebuild"))

    def list_indexes(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self._json("GET", "/v1/indexes")["indexes"]
        return found

    def describe_index(self, index: str, *, verify: bool = False) -> dict[str, Any]:
        path = f"/v1/indexes/{_quote(index)}" + ("?verify=true" if verify else "")
        described: dict[str, Any] = self._json("GET", path)
        return described

    def delete_index(self, index: str) -> None:
        self._json("DELETE", f"/v1/indexes/{_quote(index)}")

    def index_budget(self, index: str) -> dict[str, Any]:
        """The index's default budget: ``{"index", "budget"}``."""
        found: dict[str, Any] = self._json("GET", f"/v1/indexes/{_quote(index)}/budget")
        return found

    def set_index_budget(self, index: str, limits: BudgetLimits) -> dict[str, Any]:
        """Replace the index's default budget (no limits: remove it)."""
        if not limits.is_limited:
            self._json("DELETE", f"/v1/indexes/{_quote(index)}/budget")
            return {"index": index, "budget": {}}
        stored: dict[str, Any] = self._json("PUT", f"/v1/indexes/{_quote(index)}/budget",
                                            payload=limits.as_dict())
        return stored

    def get_job(self, job_id: str) -> Job | None:
        try:
            return Job.from_dict(self._json("GET", f"/v1/jobs/{_quote(job_id)}"))
        except RemoteApiError as exc:
            if exc.status == 404:
                return None
            raise

    def require_job(self, job_id: str) -> Job:
        return Job.from_dict(self._json("GET", f"/v1/jobs/{_quote(job_id)}"))

    def list_jobs(self, index: str | None = None, limit: int = 50) -> list[Job]:
        data = self._json("GET", "/v1/jobs", params={"index": index, "limit": limit})
        return [Job.from_dict(j) for j in data["jobs"]]

    def cancel_job(self, job_id: str) -> Job:
        return Job.from_dict(self._json("POST", f"/v1/jobs/{_quote(job_id)}/cancel"))

    def resume_job(self, job_id: str, limits: BudgetLimits | None = None) -> Job:
        """Resume a job paused on its budget; ``limits`` given replace the job's."""
        return Job.from_dict(self._json("POST", f"/v1/jobs/{_quote(job_id)}/resume",
                                        payload=(limits or BudgetLimits()).as_dict()))

    def wait_for_job(self, job_id: str, poll_s: float = 0.5) -> Job:
        """Poll until the job ends or pauses on its budget (it goes on without this
        process once resumed)."""
        while True:
            job = self.require_job(job_id)
            if job.state.is_final or job.state is JobState.PAUSED:
                return job
            time.sleep(poll_s)

    def export_lines(self, index: str) -> Iterator[str]:
        """The index's export file, line by line as the server streams it; a connection
        cut mid-way raises (``transfer.save_export`` also checks for the end record)."""
        with self._open("GET", f"/v1/indexes/{_quote(index)}/export") as resp:
            try:
                for raw in resp:
                    yield raw.decode("utf-8")
            except (http.client.HTTPException, OSError) as exc:
                raise RemoteUnavailableError(
                    0, "stream_failed", f"the export of index {index!r} from "
                    f"{self.base_url} was cut short: {exc!r}") from None

    # -- queries ----------------------------------------------------------------------
    def query(self, index: str, question: str, method: str | None = None,
              options: QueryOptions | None = None) -> QueryResult:
        options = options or QueryOptions()
        payload: dict[str, Any] = {"question": question, "k": options.k,
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
        return query_result_from_dict(self._json("POST", f"/v1/indexes/{_quote(index)}/query",
                                                 payload=payload))

    # -- kgbridge links ----------------------------------------------------------------
    def list_links(self, index: str, entity: str | None = None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self._json(
            "GET", f"/v1/indexes/{_quote(index)}/links", params={"entity": entity})["links"]
        return found

    def reject_link(self, index: str, link_id: str, by: str) -> dict[str, Any]:
        rejected: dict[str, Any] = self._json(
            "POST", f"/v1/indexes/{_quote(index)}/links/{_quote(link_id)}/reject",
            payload={"by": by})
        return rejected

    # -- events and webhooks ----------------------------------------------------------
    def stream_events(self, index: str | None = None, after_id: str | None = None, *,
                      follow: bool = False) -> Iterator[Event]:
        """Events after ``after_id``; with ``follow``, reconnects after a dropped
        connection from the last id seen (Last-Event-ID) until Ctrl-C."""
        cursor = after_id
        while True:
            headers = {"Accept": "text/event-stream"}
            if cursor is not None:
                headers["Last-Event-ID"] = cursor
            try:
                with self._open("GET", "/v1/events", headers=headers,
                                params={"index": index,
                                        "mode": "follow" if follow else "backlog"}) as resp:
                    for event in parse_sse(resp):
                        cursor = event.event_id
                        yield event
            except (RemoteUnavailableError, OSError, TimeoutError):
                if not follow:
                    raise
            if not follow:
                return
            time.sleep(RECONNECT_S)

    def add_webhook(self, index: str, url: str, secret: str | None) -> dict[str, Any]:
        payload = {"index": index, "url": url, **({"secret": secret} if secret is not None
                                                  else {})}
        created: dict[str, Any] = self._json("POST", "/v1/webhooks", payload=payload)
        return created

    def list_webhooks(self, index: str | None = None) -> list[dict[str, Any]]:
        hooks: list[dict[str, Any]] = self._json("GET", "/v1/webhooks",
                                                 params={"index": index})["webhooks"]
        return hooks

    def remove_webhook(self, webhook_id: str) -> None:
        self._json("DELETE", f"/v1/webhooks/{_quote(webhook_id)}")


def _budget_params(limits: BudgetLimits) -> dict[str, str]:
    """Limits as the ingest route's query parameters (only those set)."""
    return {field: str(value) for field, value in limits.as_dict().items()}


def _quote(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _error_from(exc: urllib.error.HTTPError) -> RemoteApiError:
    try:
        error = json.loads(exc.read() or b"{}").get("error") or {}
    except (ValueError, AttributeError):
        error = {}
    kind = RemoteUnavailableError if exc.code in _RETRYABLE_STATUSES else RemoteApiError
    message = str(error.get("message") or exc.reason)
    return kind(exc.code, str(error.get("code") or "http_error"), message,
                field=error.get("field"))


def parse_sse(lines: Iterable[bytes]) -> Iterator[Event]:
    """Events from a server-sent-events body (``data:`` lines holding Event JSON);
    comments and ``retry:`` lines are skipped; an ``error`` event raises."""
    name, data = "", []
    for raw in lines:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif not line and data:
            payload = json.loads("\n".join(data))
            if name == "error":
                error = payload.get("error") or {}
                raise RemoteUnavailableError(0, str(error.get("code", "stream_failed")),
                                             str(error.get("message", "the stream failed")))
            yield Event.from_dict(payload)
            name, data = "", []
