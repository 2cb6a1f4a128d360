"""Gzipped corpora (``.jsonl.gz``, ``.ndjson.gz``, ``.json.gz``) are read as their plain
forms are, by suffix from the one registry; a truncated or corrupt file keeps what
was read before the fault and names how far it got."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hopindex import readers
from hopindex.readers import (
    Compression,
    RawDocument,
    ReadError,
    Source,
    accepted_suffixes,
    read_paths,
    register_reader,
)
from hopindex.readers.base import Item, ReadOptions

RECORDS = [{"id": f"d{i}", "title": f"T{i}", "text": f"Text {i}."} for i in range(3)]


def gz(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    return path


def lines(records: list[dict[str, str]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def test_every_json_suffix_is_accepted_gzipped_too() -> None:
    """The registry lists each JSON suffix with and without .gz; text formats plain only."""
    accepted = set(accepted_suffixes())
    assert {".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz", ".json", ".json.gz"} <= accepted
    assert ".txt.gz" not in accepted and ".txt" in accepted


@pytest.mark.parametrize("name", ["c.jsonl.gz", "c.ndjson.gz", "C.JSONL.GZ"])
def test_gzipped_json_lines_read_line_by_line(tmp_path: Path, name: str) -> None:
    """A gzipped JSON Lines file gives the plain file's documents, origins and errors."""
    path = gz(tmp_path / name, lines(RECORDS[:2]) + "{broken\n" + lines(RECORDS[2:]))
    result = read_paths([path])
    assert [(d.doc_id, d.origin) for d in result.documents] == [
        ("d0", f"{path}:1"), ("d1", f"{path}:2"), ("d2", f"{path}:4")]
    assert [e.origin for e in result.errors] == [f"{path}:3"]


def test_a_gzipped_json_list_is_streamed(tmp_path: Path) -> None:
    """A gzipped .json list reads record by record; a bad record fails alone."""
    body = json.dumps(RECORDS[:2])[:-1] + ', {"text": 5}, ' + json.dumps(RECORDS[2]) + "]"
    path = gz(tmp_path / "corpus.json.gz", body)
    result = read_paths([path])
    assert [(d.doc_id, d.origin) for d in result.documents] == [
        ("d0", f"{path}[0]"), ("d1", f"{path}[1]"), ("d2", f"{path}[3]")]
    assert [(e.origin, e.reason) for e in result.errors] == [
        (f"{path}[2]:text", "field 'text' must be a string, got number")]


def test_a_gzipped_hotpotqa_object_and_array_under_jsonl(tmp_path: Path) -> None:
    """The other shapes read through gzip too: a title -> sentences object, and a list
    saved under .jsonl.gz."""
    corpus = gz(tmp_path / "hotpot.json.gz", json.dumps({"A": ["a", "b"], "B": ["c"]}))
    listed = gz(tmp_path / "list.jsonl.gz", "\n" + json.dumps(RECORDS, indent=1))
    result = read_paths([corpus, listed])
    assert result.errors == []
    assert [(d.title, d.text) for d in result.documents][:2] == [("A", "ab"), ("B", "c")]
    assert [d.origin for d in result.documents][2:] == [f"{listed}[{i}]" for i in range(3)]


def test_a_folder_mixes_gzipped_and_plain_files(tmp_path: Path) -> None:
    """Inside a folder each file is routed by its full suffix."""
    gz(tmp_path / "a.jsonl.gz", lines(RECORDS[:1]))
    (tmp_path / "b.json").write_text(json.dumps(RECORDS[1:2]))
    (tmp_path / "c.txt").write_text("Plain text.")
    result = read_paths([tmp_path])
    assert result.errors == []
    assert [d.doc_id for d in result.documents] == ["d0", "d1", "c.txt"]


def test_a_truncated_gzip_keeps_the_lines_before_the_cut(tmp_path: Path) -> None:
    """A .jsonl.gz cut short: the lines decompressed before the cut are documents, then
    one error says the compressed data ends early and after how many bytes."""
    many = [{"id": f"d{i}", "text": f"Record number {i} " * 20} for i in range(5000)]
    whole = gzip.compress(lines(many).encode())
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(whole[:len(whole) // 2])
    result = read_paths([path])
    read = [d.doc_id for d in result.documents]
    assert 0 < len(read) < len(many)
    assert read == [f"d{i}" for i in range(len(read))]
    [error] = result.errors
    assert error.origin == str(path)
    assert error.reason.startswith("read failed after ")
    assert error.reason.endswith("bytes: the compressed data ends early (is the file truncated?)")


@pytest.mark.parametrize("name", ["plain.json.gz", "plain.jsonl.gz"])
def test_a_file_that_is_not_gzip_is_one_error(tmp_path: Path, name: str) -> None:
    """A .gz name on uncompressed content: one error naming the file, nothing read."""
    path = tmp_path / name
    path.write_text(lines(RECORDS))
    result = read_paths([path])
    assert result.documents == []
    [error] = result.errors
    assert error.origin == str(path)
    assert error.reason.startswith("read failed after 0 bytes: invalid gzip data (Not a gzipped")


def test_corrupt_gzip_data_is_an_error_after_the_good_part(tmp_path: Path) -> None:
    """Damaged compressed bytes (here the CRC trailer): the error names the fault after
    whatever was read."""
    data = bytearray(gzip.compress(lines(RECORDS).encode()))
    data[-8] ^= 0xFF
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(bytes(data))
    result = read_paths([path])
    [error] = result.errors
    assert error.origin == str(path)
    assert error.reason.startswith("read failed after ")
    assert "invalid gzip data (CRC check failed" in error.reason


def test_an_unregistered_compressed_suffix_is_named_whole(tmp_path: Path) -> None:
    """notes.txt.gz is refused as '.txt.gz' (not '.gz'), listing what is accepted."""
    path = tmp_path / "notes.txt.gz"
    path.write_bytes(gzip.compress(b"text"))
    [error] = read_paths([path]).errors
    assert error.reason.startswith("unsupported file type '.txt.gz' (gzip-compressed data); "
                                   "accepted: ")
    assert ".jsonl.gz" in error.reason


def test_a_reader_registered_with_compression_opens_decompressed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """register_reader with compressions routes both suffixes to the reader, and the
    Source it gets opens decompressed bytes; the longest suffix wins."""
    # A copy of the registry, so the format registered here ends with the test.
    monkeypatch.setattr(readers, "_READERS", dict(readers._READERS))
    seen: list[tuple[Compression, bytes]] = []

    def read_upper(source: Source, options: ReadOptions) -> Iterator[Item]:
        with source.open_bytes() as fh:
            seen.append((source.compression, fh.read()))
        yield RawDocument(None, "", "x", {}, source.origin)

    def read_v2(source: Source, options: ReadOptions) -> Iterator[Item]:
        yield RawDocument(None, "", "v2", {}, source.origin)

    register_reader((".upper",), read_upper, compressions=tuple(Compression))
    register_reader((".v2.upper",), read_v2)
    gz(tmp_path / "a.upper.gz", "zipped")
    (tmp_path / "b.upper").write_text("plain")
    (tmp_path / "c.v2.upper").write_text("newer")
    result = read_paths([tmp_path / "a.upper.gz", tmp_path / "b.upper", tmp_path / "c.v2.upper"])
    assert [d.text for d in result.documents] == ["x", "x", "v2"]
    assert seen == [(Compression.GZIP, b"zipped"), (Compression.NONE, b"plain")]
    assert {".upper", ".upper.gz", ".v2.upper"} <= set(accepted_suffixes())


# Ids by name: gzip writes the time into its header, and pytest-xdist's processes
# must collect the same test ids.
@pytest.mark.parametrize("packed", [b"", gzip.compress(b"")], ids=["no-bytes", "empty-member"])
def test_an_empty_gzip_file_is_an_empty_json_file(tmp_path: Path, packed: bytes) -> None:
    """No bytes, or an empty compressed stream: the JSON error an empty file gets."""
    path = tmp_path / "empty.json.gz"
    path.write_bytes(packed)
    result = read_paths([path])
    assert result.documents == []
    assert result.errors == [ReadError(f"{path}:1", "invalid JSON: Expecting value (column 1)")]
