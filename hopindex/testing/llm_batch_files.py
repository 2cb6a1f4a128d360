"""What the test server's Batch API reads and writes (``llm_batches``): the files it
stores, the input file's lines as OpenAI validates them, and the lines of the output
and error files in OpenAI's shapes."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
WINDOW_S = 24 * 3600
# OpenAI's limits: lines per batch, metadata pairs and their lengths.
MAX_LINES = 50_000
_MAX_METADATA = 16
_MAX_KEY, _MAX_VALUE = 64, 512
EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."
SERVER_ERROR_MESSAGE = ("The server had an error while processing your request. "
                        "Sorry about that!")
_DUPLICATE_MESSAGE = ("The custom_id for this request is a duplicate of another request. "
                      "The custom_id parameter must be unique for each request in a batch.")
_REQUIRED = ("custom_id", "method", "url", "body")


@dataclass(frozen=True, slots=True)
class StoredFile:
    id: str
    filename: str
    purpose: str
    content: bytes
    created_at: int

    def as_object(self) -> dict[str, Any]:
        """OpenAI's File object."""
        return {"id": self.id, "object": "file", "bytes": len(self.content),
                "created_at": self.created_at, "filename": self.filename,
                "purpose": self.purpose, "status": "processed", "expires_at": None,
                "status_details": None}


@dataclass(frozen=True, slots=True)
class InputLine:
    number: int  # in the input file, from 1
    custom_id: str
    body: dict[str, Any]


def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex}"


def _problem(line: int | None, code: str, message: str,
             param: str | None = None) -> dict[str, Any]:
    """One entry of a failed batch's ``errors.data``."""
    return {"code": code, "message": message, "param": param, "line": line}


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(raw)
    except ValueError:  # not JSON, or not UTF-8
        return None
    return record if isinstance(record, dict) else None


def _record_problems(number: int, record: dict[str, Any],
                     seen: set[str]) -> list[dict[str, Any]]:
    """What is wrong with one line's request, apart from its model."""
    problems = [_problem(number, "missing_required_parameter",
                         f"Missing required parameter: '{key}'.", key)
                for key in _REQUIRED if record.get(key) in (None, "")]
    custom_id = record.get("custom_id")
    checks = (
        (isinstance(custom_id, str) and custom_id in seen, "duplicate_custom_id",
         _DUPLICATE_MESSAGE, "custom_id"),
        ("url" in record and record["url"] != ENDPOINT, "url_mismatch",
         f"The url {record.get('url')!r} does not match the batch's endpoint {ENDPOINT}.",
         "url"),
        ("method" in record and record["method"] != "POST", "invalid_method",
         "The method of a batch request must be POST.", "method"),
        ("custom_id" in record and not isinstance(custom_id, str), "invalid_type",
         "custom_id must be a string.", "custom_id"),
        ("body" in record and not isinstance(record["body"], dict), "invalid_type",
         "body must be a JSON object.", "body"))
    return problems + [_problem(number, code, message, param)
                       for failed, code, message, param in checks if failed]


def validate_input(content: bytes) -> tuple[list[InputLine], list[dict[str, Any]]]:
    """The lines of a batch input file, and the problems that fail it, each naming its
    line (OpenAI's codes). Blank lines are skipped; one model serves a batch."""
    lines: list[InputLine] = []
    problems: list[dict[str, Any]] = []
    seen: set[str] = set()
    model: str | None = None
    for number, raw in enumerate(content.split(b"\n"), start=1):
        if not raw.strip():
            continue
        record = _json_object(raw)
        if record is None:
            problems.append(_problem(number, "invalid_json_line",
                                     "This line is not parseable as valid JSON."))
            continue
        found = _record_problems(number, record, seen)
        body = record.get("body")
        if not found and isinstance(body, dict) and isinstance(body.get("model"), str):
            if model is not None and body["model"] != model:
                found.append(_problem(number, "model_mismatch", f"The model {body['model']!r} "
                                      f"differs from the batch's model {model!r}.",
                                      "body.model"))
            model = model or body["model"]
        problems += found
        if not found and isinstance(body, dict):
            seen.add(record["custom_id"])
            lines.append(InputLine(number, record["custom_id"], body))
    if not lines and not problems:
        problems.append(_problem(None, "empty_file", "The batch input file is empty."))
    if len(lines) > MAX_LINES:
        problems.append(_problem(None, "too_many_tasks", f"The batch input file holds "
                                 f"{len(lines)} requests; at most {MAX_LINES} are allowed."))
    return lines, problems


def checked_metadata(value: object) -> dict[str, str] | None:
    """A batch's metadata, or None when it is not within OpenAI's limits (a 400)."""
    if not isinstance(value, dict) or len(value) > _MAX_METADATA or not all(
            isinstance(key, str) and isinstance(item, str) and len(key) <= _MAX_KEY
            and len(item) <= _MAX_VALUE for key, item in value.items()):
        return None
    return {str(key): str(item) for key, item in value.items()}


METADATA_LIMITS = (f"metadata must map at most {_MAX_METADATA} keys of up to {_MAX_KEY} "
                   f"characters to strings of up to {_MAX_VALUE}")


def drawn_share(seed: int, custom_id: str) -> float:
    """Where ``custom_id`` falls in [0, 1) for ``seed``: the same on every run."""
    digest = hashlib.sha256(json.dumps([seed, custom_id]).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0 ** 64


def result_line(custom_id: str, status: int, body: dict[str, Any]) -> dict[str, Any]:
    """A line of the output (status 200) or error file: the request's response."""
    return {"id": new_id("batch_req_"), "custom_id": custom_id,
            "response": {"status_code": status, "request_id": new_id("req_"), "body": body},
            "error": None}


def expired_line(custom_id: str) -> dict[str, Any]:
    """A line of the error file for a request the batch's window closed on."""
    return {"id": new_id("batch_req_"), "custom_id": custom_id, "response": None,
            "error": {"code": "batch_expired", "message": EXPIRED_MESSAGE}}


def batch_usage(done: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A Batch object's ``usage``: the sum of its answered lines' usage."""
    usages = [line["response"]["body"]["usage"] for line in done
              if line["response"]["status_code"] == 200]
    prompt = sum(usage["prompt_tokens"] for usage in usages)
    completion = sum(usage["completion_tokens"] for usage in usages)
    reasoning = sum(usage["completion_tokens_details"]["reasoning_tokens"] for usage in usages)
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": prompt + completion}


def jsonl(lines: Sequence[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
