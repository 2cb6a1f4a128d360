"""Hostile record content fails alone in the readers: the error names the file, line
and field, and the other records are read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hopindex.readers import read_paths

GOOD = json.dumps({"id": "good", "title": "Warsaw", "text": "Warsaw is in Poland."})


@pytest.mark.parametrize(("line", "field"), [
    ('{"id": "b", "text": "x", "metadata": {"author": "\\ud800"}}', "metadata.author"),
    ('{"id": "b", "text": "x", "metadata": {"tags": ["a", "\\udfff"]}}', "metadata.tags[1]"),
    ('{"id": "b", "text": "x", "metadata": {"a": {"b": "\\ud800"}}}', "metadata.a.b"),
    ('{"id": "b", "text": "x", "author": "\\ud800"}', "author"),
    ('{"id": "b", "text": "x", "metadata": {"\\ud800": 1}}', 'metadata["\\ud800"]'),
    ('{"id": "b\\ud800", "text": "x"}', "id"),
    ('{"id": "b", "title": "\\ud800", "text": "x"}', "title"),
])
def test_an_unpaired_surrogate_anywhere_names_line_and_field(tmp_path: Path, line: str,
                                                            field: str) -> None:
    """A JSON escape UTF-8 cannot store, in any string or key: an error at
    ``file:line:field``; the good line is read."""
    path = tmp_path / "c.jsonl"
    path.write_text(f"{GOOD}\n{line}\n", encoding="utf-8")
    result = read_paths([path])
    assert [d.doc_id for d in result.documents] == ["good"]
    [error] = result.errors
    assert error.origin == f"{path}:2:{field}"
    assert "surrogate" in error.reason and field in error.reason
    str(error).encode("utf-8")


def test_json_array_records_name_their_position_and_field(tmp_path: Path) -> None:
    """In a JSON array the record is named by its index."""
    path = tmp_path / "c.json"
    path.write_text('[{"id": "a", "text": "x"}, {"id": "b", "text": "y", '
                    '"metadata": {"author": "\\ud800"}}]', encoding="utf-8")
    [error] = read_paths([path]).errors
    assert error.origin == f"{path}[1]:metadata.author"


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_json_nested_too_deeply_is_one_error(tmp_path: Path, suffix: str) -> None:
    """A line nesting arrays past the parser's recursion limit is an error for that line
    (or file) naming where, not a RecursionError that stops the read."""
    deep = '{"id": "deep", "text": "x", "metadata": ' + "[" * 200_000 + "]" * 200_000 + "}"
    path = tmp_path / f"c{suffix}"
    path.write_text(f"{deep}\n" + (f"{GOOD}\n" if suffix == ".jsonl" else ""),
                    encoding="utf-8")
    result = read_paths([path])
    field = "metadata" + "[0]" * 11
    assert [(e.origin, e.reason) for e in result.errors] == [
        (f"{path}:1:{field}", f"field '{field}' nests JSON deeper than 64 levels")]
    assert [d.doc_id for d in result.documents] == (["good"] if suffix == ".jsonl" else [])


@pytest.mark.skipif(os.uname().sysname == "Darwin", reason="macOS refuses non-UTF-8 names")
def test_a_file_name_that_is_not_utf8_is_an_error_with_an_escaped_name(tmp_path: Path) -> None:
    """A text file's id is its name: one that is not UTF-8 cannot be stored, so it is an
    error whose origin is escaped (storable, printable); the other file is read."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "good.txt").write_text("Good text.", encoding="utf-8")
    bad = os.fsdecode(b"caf\xe9.txt")
    (folder / bad).write_text("Bad name.", encoding="utf-8")
    result = read_paths([folder])
    assert [d.doc_id for d in result.documents] == ["good.txt"]
    [error] = result.errors
    assert error.origin == f"{folder}/caf\\udce9.txt:id"
    assert "not valid UTF-8" in error.reason
    str(error).encode("utf-8")
