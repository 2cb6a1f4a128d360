"""Every refusal for a document's size names the variable that sets the limit
(HOPINDEX_MAX_DOCUMENT_BYTES), which a user can change, not the settings field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hopindex.readers import RawDocument, read_paths
from hopindex.readers.base import ReadOptions
from hopindex.readers.json_line import line_limit
from hopindex.scheduler.submit import validate_documents

LIMIT = 10
# Longer than any line a document of LIMIT bytes may take: refused before it is read.
HUGE = "x" * (line_limit(ReadOptions(max_document_bytes=LIMIT)) + 5)
# {"text": HUGE} as JSON
RECORD_CHARS = len(HUGE) + 12
# (file name, content, what the error's origin adds to the path, its reason)
OVERSIZE = {
    "jsonl record": ("c.jsonl", json.dumps({"id": "big", "text": "é" * 6}) + "\n", ":1",
                     "document id 'big' is 12 bytes of UTF-8 text, over the 10-byte limit "
                     "(HOPINDEX_MAX_DOCUMENT_BYTES)"),
    "text file": ("big.txt", "x" * 11, "",
                  "document 'big.txt' is 11 bytes of UTF-8 text, over the 10-byte limit "
                  "(HOPINDEX_MAX_DOCUMENT_BYTES)"),
    # Past the slack a file's size is allowed over the limit (a heading, blank lines):
    # refused by its size, unread.
    "text file too large to open": (
        "huge.txt", "x" * 100_000, "",
        "document 'huge.txt' is 100,000 bytes, over the 10-byte limit "
        "(HOPINDEX_MAX_DOCUMENT_BYTES)"),
    # The line's bytes with its newline.
    "jsonl line": ("l.jsonl", json.dumps({"text": HUGE}) + "\n", ":1",
                   f"line is {RECORD_CHARS + 1:,} bytes, too large for a document of at most "
                   "10 bytes (HOPINDEX_MAX_DOCUMENT_BYTES)"),
    "json array record": ("a.json", json.dumps([{"text": HUGE}]), "[0]",
                          f"record is {RECORD_CHARS:,} characters of JSON, too large for a "
                          "document of at most 10 bytes (HOPINDEX_MAX_DOCUMENT_BYTES)"),
    "json lines under a .json name": (
        "j.json", json.dumps({"text": "a"}) + "\n" + json.dumps({"text": HUGE}) + "\n",
        ":2", f"line is {RECORD_CHARS:,} characters, too large for a document of at most "
              "10 bytes (HOPINDEX_MAX_DOCUMENT_BYTES)"),
    "json string": ("s.jsonl", json.dumps({"text": "a", "note": "y" * 11}) + "\n",
                    ":1:note", "field 'note' is a string of 11 characters, over "
                               "HOPINDEX_MAX_DOCUMENT_BYTES=10"),
}


@pytest.mark.parametrize("kind", OVERSIZE)
def test_a_document_over_the_limit_names_the_variable(tmp_path: Path, kind: str) -> None:
    """Each reader's size refusal (a record's text, a text file before and after it is
    read, a line or a record's JSON skipped unread, a JSON string) gives the limit with
    HOPINDEX_MAX_DOCUMENT_BYTES, and never the field max_document_bytes."""
    name, content, where, reason = OVERSIZE[kind]
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    result = read_paths([path], max_document_bytes=LIMIT)
    assert [(e.origin, e.reason) for e in result.errors] == [(f"{path}{where}", reason)]


def test_documents_given_whole_name_the_variable() -> None:
    """Documents ingested as records (the Python and HTTP APIs) are checked again at
    submit: one over the limit is refused naming its size, the limit and the variable."""
    documents, errors = validate_documents(
        "i", [RawDocument(doc_id="big", title="Big", text="é" * 6, metadata={},
                          origin="api")], LIMIT)
    assert not documents
    assert [e.reason for e in errors] == [
        "document is 12 bytes of UTF-8 text, over the 10-byte limit "
        "(HOPINDEX_MAX_DOCUMENT_BYTES)"]
