"""The Batch API's values and file formats (``batch_api`` makes the calls): the input
file hopindex writes, the provider's output and error files it reads, and the typed
values a batch's status and results are given as.

An input line is ``{"custom_id", "method": "POST", "url": "/v1/chat/completions",
"body"}``. A result line is ``{"id", "custom_id", "response": {"status_code",
"request_id", "body"}, "error": null}`` (the output file holds the 200s, the error file
the other statuses, ``body`` then being an OpenAI error object), or, for a line never
run, ``{"id", "custom_id", "response": null, "error": {"code", "message"}}``
(``batch_expired``). Lines are matched by custom_id, never by order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from hopindex.core.errors import InvalidInputError
from hopindex.core.provider_batches import BatchState

CHAT_ENDPOINT: Final = "/v1/chat/completions"
COMPLETION_WINDOW: Final = "24h"
# Line errors that say the line was never run: sent again, it can succeed.
_NOT_RUN_CODES = frozenset({"batch_expired", "batch_cancelled"})
_RETRYABLE_STATUSES = frozenset({408, 409, 429})


@dataclass(frozen=True, slots=True)
class BatchLine:
    """One request of a batch: a chat-completions body under its custom_id."""

    custom_id: str
    body: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class BatchTicket:
    """A submitted batch: what polling and cleaning up need."""

    batch_id: str
    input_file_id: str


@dataclass(frozen=True, slots=True)
class BatchCounts:
    """``request_counts``: ``failed`` counts lines answered with an error status; a line
    expired or cancelled is in neither count."""

    total: int
    completed: int
    failed: int


@dataclass(frozen=True, slots=True)
class BatchProblem:
    """One entry of a failed batch's ``errors``: what is wrong, and on which line."""

    code: str
    message: str
    line: int | None = None
    param: str | None = None

    def describe(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"{where}{self.code}: {self.message}"


@dataclass(frozen=True, slots=True)
class BatchStatus:
    batch_id: str
    state: BatchState
    counts: BatchCounts
    input_file_id: str
    output_file_id: str | None
    error_file_id: str | None
    errors: tuple[BatchProblem, ...]
    metadata: Mapping[str, str]

    @property
    def file_ids(self) -> tuple[str, ...]:
        """The batch's files at the provider: what ``delete_files`` takes."""
        return tuple(file_id for file_id in (self.input_file_id, self.output_file_id,
                                             self.error_file_id) if file_id)


@dataclass(frozen=True, slots=True)
class BatchLineError:
    """A line the provider did not answer with a reply: its HTTP status (None for a
    line never run: expired, cancelled), and whether sending it again can succeed."""

    code: str
    message: str
    status_code: int | None
    retryable: bool


@dataclass(frozen=True, slots=True)
class BatchResults:
    """An ended batch's lines by custom_id: the ``chat.completion`` body of each line
    answered 200, a ``BatchLineError`` for each other; ``missing`` holds the lines in
    neither file (not run before a cancel, or lost)."""

    batch_id: str
    replies: Mapping[str, dict[str, Any] | BatchLineError]
    missing: frozenset[str]

    @property
    def completions(self) -> dict[str, dict[str, Any]]:
        return {custom_id: reply for custom_id, reply in self.replies.items()
                if not isinstance(reply, BatchLineError)}

    @property
    def errors(self) -> dict[str, BatchLineError]:
        return {custom_id: reply for custom_id, reply in self.replies.items()
                if isinstance(reply, BatchLineError)}


def write_input_file(lines: Iterable[BatchLine]) -> bytes:
    """``lines`` as a Batch API input file: one JSON request per line, UTF-8.
    ``InvalidInputError`` for no line at all, or an empty or repeated custom_id (the
    provider would fail the whole batch for it)."""
    seen: set[str] = set()
    out: list[str] = []
    for line in lines:
        if not line.custom_id or line.custom_id in seen:
            raise InvalidInputError("a batch line's custom_id must be non-empty and unique",
                                    where=f"custom_id {line.custom_id!r}")
        seen.add(line.custom_id)
        out.append(json.dumps({"custom_id": line.custom_id, "method": "POST",
                               "url": CHAT_ENDPOINT, "body": dict(line.body)},
                              ensure_ascii=False, separators=(",", ":")))
    if not out:
        raise InvalidInputError("a batch needs at least one line")
    return ("\n".join(out) + "\n").encode("utf-8")


def read_result_file(content: bytes) -> tuple[dict[str, dict[str, Any] | BatchLineError], int]:
    """A result file's lines by custom_id, and how many lines could not be read: a line
    without a custom_id cannot be matched (its request shows as missing)."""
    read: dict[str, dict[str, Any] | BatchLineError] = {}
    unreadable = 0
    for raw in content.splitlines():
        if not raw.strip():
            continue
        record = _json_object(raw)
        if record is None or not isinstance(record.get("custom_id"), str):
            unreadable += 1
            continue
        read[record["custom_id"]] = _line_reply(record)
    return read, unreadable


def input_ids(content: bytes) -> list[str]:
    """The custom_ids of an input file's lines."""
    records = (_json_object(raw) for raw in content.splitlines() if raw.strip())
    return [record["custom_id"] for record in records
            if record is not None and isinstance(record.get("custom_id"), str)]


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _line_reply(record: Mapping[str, Any]) -> dict[str, Any] | BatchLineError:
    """One result line: the reply body of a 200, else what went wrong."""
    response, error = record.get("response"), record.get("error")
    if isinstance(response, dict) and isinstance(response.get("status_code"), int):
        status, body = response["status_code"], response.get("body")
        if status == 200 and isinstance(body, dict):
            return body
        detail = body.get("error") if isinstance(body, dict) else None
        detail = detail if isinstance(detail, dict) else {}
        return BatchLineError(
            str(detail.get("code") or detail.get("type") or f"http_{status}"),
            str(detail.get("message") or f"the request was answered {status}"), status,
            status in _RETRYABLE_STATUSES or status >= 500)
    if isinstance(error, dict):
        code = str(error.get("code") or "batch_error")
        return BatchLineError(code, str(error.get("message") or ""), None,
                              code in _NOT_RUN_CODES)
    return BatchLineError("unreadable_line", "the result line holds neither a response "
                          "nor an error", None, True)
