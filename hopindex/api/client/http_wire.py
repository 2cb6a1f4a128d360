"""The HTTP transport of ``Client.connect`` (on the standard library's HTTP client):
requests, the multipart upload of files, the server-sent-events reader (events read
through their wire model, wire.EventView), and error answers turned back into
hopindex's own error types.

An answer whose code names an error type (``core/errors.py``) raises that type with
the server's message, so a caller catches the same class through either client; a
code of no type (a refused key, a busy slot, a body too large) raises
``RemoteApiError`` with the status and code.
"""

from __future__ import annotations

import json
import secrets
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hopindex.api.client.wire import EventView
from hopindex.core.budget import BudgetLimits
from hopindex.core.errors import HopindexError, InvalidInputError, error_type_for
from hopindex.core.events import Event
from hopindex.core.tracing.propagation import current_carrier
from hopindex.readers.options import Reading

DEFAULT_TIMEOUT_S = 120.0
RECONNECT_S = 1.0
_RETRYABLE_STATUSES = (429, 502, 503, 504)
# The event stream's frame for a reader that fell behind the log's retention.
GAP_EVENT = "gap"


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
    name: str  # the name the server reads it under: its documents' id, a record file's reader
    path: Path


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def uploads_for(paths: Sequence[Path], reading: Reading | None = None) -> list[Upload]:
    """Files to send for CLI paths: a file under its own name, a folder's files that
    ``reading`` selects under their path inside it (document files take that as their
    id, as when read locally)."""
    reading = reading or Reading()
    found: list[Upload] = []
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.rglob("*")
                           if p.is_file() and not _hidden(p.relative_to(path))
                           and reading.selects(p.relative_to(path).as_posix()))
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


class Transport:
    """Requests to one server: ``Transport("http://host:8080", api_key)``."""

    def __init__(self, base_url: str, api_key: str = "",
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._timeout_s = timeout_s

    def open(self, method: str, path: str, *, params: dict[str, Any] | None = None,
              body: bytes | None = None, content_type: str | None = None,
              headers: dict[str, str] | None = None, timeout_s: float | None = None,
              names: Mapping[str, str] | None = None) -> Any:
        """``names``: the client's name of each field of this call the API names
        otherwise (a query parameter ``id`` is ``get_document``'s ``doc_id``)."""
        query = urllib.parse.urlencode({k: v for k, v in (params or {}).items()
                                        if v is not None})
        url = f"{self.base_url}{path}" + (f"?{query}" if query else "")
        # The caller's span (an application's, the CLI command's) is the request's parent
        # on the server: one trace across the two processes.
        request = urllib.request.Request(url, data=body, method=method,
                                         headers={**current_carrier(), **(headers or {})})
        if content_type:
            request.add_header("Content-Type", content_type)
        if self._api_key:
            request.add_header("Authorization", f"Bearer {self._api_key}")
        try:
            return urllib.request.urlopen(request, timeout=timeout_s or self._timeout_s)
        except urllib.error.HTTPError as exc:
            raise _error_from(exc, names or {}) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RemoteUnavailableError(0, "unreachable", f"cannot reach the hopindex API at "
                                                           f"{self.base_url}: {reason}") from None

    def json_call(self, method: str, path: str, *, params: dict[str, Any] | None = None,
              payload: object = None, names: Mapping[str, str] | None = None) -> Any:
        body = None if payload is None else json.dumps(payload).encode()
        with self.open(method, path, params=params, body=body,
                        content_type="application/json" if body is not None else None,
                        names=names) as resp:
            data = resp.read()
        return json.loads(data) if data else None

def budget_params(limits: BudgetLimits) -> dict[str, str]:
    """Limits as the ingest route's query parameters (only those set)."""
    return {field: str(value) for field, value in limits.as_dict().items()}


def quote(part: str) -> str:
    return urllib.parse.quote(part, safe="")


_CLIENT_NAMES = {"name": "index"}


def _without_field_name(message: str, field: str) -> str:
    """The API words a refusal of its own ``field 'k' must be ...`` (or ``'k' must be
    one of ...``); an error raised in this process reads ``k: must be ...``, which
    ``from_answer`` makes of the rest."""
    for lead in (f"field {field!r} ", f"{field!r} "):
        if message.startswith(lead):
            return message.removeprefix(lead)
    return message


def _error_from(exc: urllib.error.HTTPError, names: Mapping[str, str]) -> HopindexError:
    try:
        error = json.loads(exc.read() or b"{}").get("error") or {}
    except (ValueError, AttributeError):
        error = {}
    if not isinstance(error, dict):
        error = {}
    return error_from_answer(exc.code, {"message": str(exc.reason), **error}, names)


def error_from_answer(status: int, error: Mapping[str, Any],
                      names: Mapping[str, str] | None = None) -> HopindexError:
    """The error an API error body (``{"code", "message", "field"}``) with ``status``
    stands for: hopindex's own type when the code names one, else ``RemoteApiError``."""
    names = names or {}
    code = str(error.get("code") or "http_error")
    message = str(error.get("message") or "the API refused the request")
    field = error.get("field")
    # The API names an index ``name`` (the path segment, the create body's field); the
    # client's calls name it ``index``, as a refusal raised in this process does.
    if isinstance(field, str):
        message = _without_field_name(message, field)
        field = {**_CLIENT_NAMES, **names}.get(field, field)
    kind = error_type_for(code)
    if kind is not None and kind.http_status == status:
        return kind.from_answer(message, where=field, details=error)
    remote = RemoteUnavailableError if status in _RETRYABLE_STATUSES else RemoteApiError
    return remote(status, code, message, field=field)


def sse_frames(lines: Iterable[bytes]) -> Iterator[tuple[str, Any]]:
    """``(event name, decoded JSON data)`` of each event of a server-sent-events body;
    comments, ``id:`` and ``retry:`` lines are skipped."""
    name, data = "", []
    for raw in lines:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif not line and data:
            yield name, json.loads("\n".join(data))
            name, data = "", []


def parse_sse(lines: Iterable[bytes]) -> Iterator[Event]:
    """Events from the event log's stream (``data:`` lines holding Event JSON); an
    ``error`` event raises, and so does a ``gap`` event (the stream fell behind the
    log's retention), as the ``EventsGoneError`` it carries."""
    for name, payload in sse_frames(lines):
        if name == GAP_EVENT:
            error = payload.get("error") or {}
            raise error_from_answer(int(error.get("status") or 410), error)
        if name == "error":
            error = payload.get("error") or {}
            raise RemoteUnavailableError(0, str(error.get("code", "stream_failed")),
                                         str(error.get("message", "the stream failed")))
        yield EventView.model_validate(payload).to_runtime()
