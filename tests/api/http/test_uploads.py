"""Reader origins become line, record and field in error answers; upload names must
stay inside the upload folder."""

from __future__ import annotations

import pytest

from hopindex.api.http.errors import ApiError
from hopindex.api.http.uploads import _safe_name, locate, rejection
from hopindex.readers import ReadError


@pytest.mark.parametrize(("origin", "expected"), [
    ("body.jsonl:3", {"file": "body.jsonl", "line": 3}),
    ("body.jsonl:3:text", {"file": "body.jsonl", "line": 3, "field": "text"}),
    ("body.json[2]", {"file": "body.json", "record": 2}),
    ("body.json[2]:metadata", {"file": "body.json", "record": 2, "field": "metadata"}),
    ("body.json:5", {"file": "body.json", "line": 5}),
    ('body.json["A title"]', {"file": "body.json"}),
    ("notes/a.md", {"file": "notes/a.md"}),
])
def test_locate_reader_origins(origin: str, expected: dict[str, object]) -> None:
    assert locate(origin) == expected


def test_rejection_lists_every_error_and_leads_with_the_first() -> None:
    errors = [ReadError("body.jsonl:2", "invalid JSON"), ReadError("body.jsonl:4:text", "empty")]
    error = rejection(errors)
    assert (error.status, error.code, error.line, error.field) == (400, "invalid_document", 2,
                                                                   None)
    assert error.message == "body.jsonl:2: invalid JSON"
    assert error.details["error_count"] == 2
    assert [e["where"] for e in error.details["errors"]] == ["body.jsonl:2", "body.jsonl:4:text"]


@pytest.mark.parametrize("name", ["../x.jsonl", "a/../../x", ".env", "a/.git/config",
                                  "x:y.jsonl", "a\\..\\..\\x", "", None, "x[0].json"])
def test_unsafe_upload_names_are_refused(name: str | None) -> None:
    with pytest.raises(ApiError) as caught:
        _safe_name(name, 1)
    assert caught.value.field == "file"


def test_safe_names_keep_their_folders() -> None:
    assert str(_safe_name("notes/2024/a.md", 1)) == "notes/2024/a.md"
    assert str(_safe_name("corpus.jsonl", 1)) == "corpus.jsonl"
