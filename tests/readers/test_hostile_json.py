"""Hostile JSON in files costs its own record only: deep nesting, runaway numbers,
over-long strings and unpaired surrogates (escaped, raw or encoded) are errors naming
the file, line or record, and field; the other records are read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hopindex.readers import read_paths
from hopindex.readers.base import ReadOptions, Source
from hopindex.readers.jsonfile import read_json

GOOD = json.dumps({"id": "good", "title": "Warsaw", "text": "Warsaw is in Poland."})
DEEP = "[" * 10_000 + "]" * 10_000
LIMIT = 1_000  # max_document_bytes in these tests: no string may be longer

# (the record's JSON, the field the error names, words its reason holds)
HOSTILE = {
    "deep": ('{"id": "b", "text": "x", "metadata": {"tags": ' + DEEP + "}}",
             "metadata.tags" + "[0]" * 10, "deeper than 64 levels"),
    "huge integer": ('{"id": "b", "text": "x", "metadata": {"n": ' + "9" * 5_000 + "}}",
                     "metadata.n", "number of 5,000 characters"),
    "long string": ('{"id": "b", "text": "x", "note": "' + "y" * (LIMIT + 1) + '"}',
                    "note", f"string of {LIMIT + 1:,} characters, over "
                            f"HOPINDEX_MAX_DOCUMENT_BYTES={LIMIT:,}"),
    "escaped surrogate": ('{"id": "b", "text": "x", "metadata": {"tags": ["a", "\\ud800"]}}',
                          "metadata.tags[1]", "unpaired surrogate (U+D800)"),
    "not a number": ('{"id": "b", "text": "x", "score": NaN}', "score", "not a JSON number"),
}


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_jsonl_line_fails_alone_naming_line_and_field(tmp_path: Path,
                                                               kind: str) -> None:
    """The bad line is one error at ``file:2:field``; the lines around it are read."""
    line, field, reason = HOSTILE[kind]
    after = json.dumps({"id": "after", "text": "Read after the bad line."})
    path = tmp_path / "c.jsonl"
    path.write_text(f"{GOOD}\n{line}\n{after}\n", encoding="utf-8")
    result = read_paths([path], max_document_bytes=LIMIT)
    assert [d.doc_id for d in result.documents] == ["good", "after"]
    [error] = result.errors
    assert error.origin == f"{path}:2:{field}"
    assert reason in error.reason and field in error.reason


def test_a_surrogate_encoded_in_the_bytes_names_its_field(tmp_path: Path) -> None:
    """Bytes ED A0 80 (a surrogate written as if UTF-8) in a line: the field is named,
    not just a byte offset."""
    path = tmp_path / "c.jsonl"
    path.write_bytes(GOOD.encode() + b'\n{"id": "b", "text": "x \xed\xa0\x80"}\n')
    result = read_paths([path])
    assert [d.doc_id for d in result.documents] == ["good"]
    [error] = result.errors
    assert error.origin == f"{path}:2:text" and "surrogate" in error.reason


@pytest.mark.parametrize("kind", [k for k in HOSTILE if k != "deep"])
def test_a_hostile_record_in_a_json_array_fails_alone(tmp_path: Path, kind: str) -> None:
    """In a .json list the bad record is named by position and field; the records before
    and after it are read."""
    record, field, reason = HOSTILE[kind]
    path = tmp_path / "c.json"
    path.write_text(f'[{GOOD}, {record}, {{"id": "last", "text": "y"}}]', encoding="utf-8")
    result = read_paths([path], max_document_bytes=LIMIT)
    assert [d.doc_id for d in result.documents] == ["good", "last"]
    [error] = result.errors
    assert error.origin == f"{path}[1]:{field}"
    assert reason in error.reason


def test_a_record_nested_too_deeply_in_a_json_list_fails_alone(tmp_path: Path) -> None:
    """Nesting stops the parse of its record only: one error naming the line, the
    record's index and the field (counted from the record, as in JSON Lines), no
    RecursionError; the records around it are read."""
    path = tmp_path / "c.json"
    path.write_text(f"[\n{GOOD},\n" + HOSTILE["deep"][0] + ',\n{"id": "last", "text": "y"}\n]',
                    encoding="utf-8")
    result = read_paths([path])
    assert [d.doc_id for d in result.documents] == ["good", "last"]
    [error] = result.errors
    assert error.origin == f"{path}:3[1]:metadata.tags" + "[0]" * 10
    assert "deeper than 64 levels" in error.reason


def test_a_hotpotqa_title_with_a_surrogate_fails_alone(tmp_path: Path) -> None:
    """In a title -> sentences corpus a bad title is refused by name (written with
    escapes, so the error can be stored) and the other titles are read."""
    path = tmp_path / "corpus.json"
    path.write_text('{"Warsaw": ["Warsaw is in Poland."], "Bad\\ud800": ["x"], '
                    '"Huge": ["a", ' + "1" * 300 + "]}", encoding="utf-8")
    result = read_paths([path])
    assert [d.title for d in result.documents] == ["Warsaw"]
    assert [(e.origin, "surrogate" in e.reason or "number" in e.reason)
            for e in result.errors] == [
        (f'{path}["Bad\\ud800"]:title', True), (f'{path}["Huge"]:text[1]', True)]
    for error in result.errors:
        str(error).encode("utf-8")


def test_json_lines_under_a_json_name_keep_their_good_lines(tmp_path: Path) -> None:
    """A .json file holding JSON lines whose first line has a runaway number is still
    read line by line: that line fails, the next one is read."""
    path = tmp_path / "c.json"
    path.write_text(HOSTILE["huge integer"][0] + "\n" + GOOD + "\n", encoding="utf-8")
    result = read_paths([path])
    assert [d.doc_id for d in result.documents] == ["good"]
    assert [e.origin for e in result.errors] == [f"{path}:1:metadata.n"]


def test_no_hostile_input_raises_out_of_a_reader(tmp_path: Path) -> None:
    """Every hostile shape as a whole .json file: an error item, never an exception."""
    options = ReadOptions(max_document_bytes=LIMIT)
    for number, (record, _, _) in enumerate(HOSTILE.values()):
        path = tmp_path / f"{number}.json"
        path.write_text(record, encoding="utf-8")
        items = list(read_json(Source(path, str(path), path.name), options))
        assert len(items) == 1 and not hasattr(items[0], "text")
