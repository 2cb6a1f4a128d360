"""The .json reader streams: a list is cut into records parsed one at a time, so a
malformed, oversized or truncated record fails alone, named by its index (and line),
and the others are read; a large title -> sentences object is read title by title;
and chunk boundaries (inside a string, an escape, a UTF-8 sequence, a BOM) change
nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hopindex.core.errors import InvalidInputError
from hopindex.readers import RawDocument, ReadError, read_paths
from hopindex.readers.base import Item, ReadOptions, Source
from hopindex.readers.compression import SourceReadError
from hopindex.readers.json_line import line_limit
from hopindex.readers.jsonfile import read_json_stream

SOURCE = Source(Path("c.json"), "c.json", "c.json")
BAD_BYTE = b"\xff"  # never valid in UTF-8


def chunked(data: bytes, size: int) -> Iterator[bytes]:
    for at in range(0, len(data), size):
        yield data[at:at + size]


def stream(data: bytes, size: int = 1 << 20, options: ReadOptions | None = None) -> list[Item]:
    return list(read_json_stream(chunked(data, size), SOURCE, options or ReadOptions()))


def split(items: list[Item]) -> tuple[list[RawDocument], list[ReadError]]:
    return ([i for i in items if isinstance(i, RawDocument)],
            [i for i in items if isinstance(i, ReadError)])


def shown(items: list[Item]) -> list[tuple[str, str]]:
    return [("doc", i.text) if isinstance(i, RawDocument) else (i.origin, i.reason)
            for i in items]


# --- chunking changes nothing --------------------------------------------------------

TRICKY = [
    {"id": "q", "text": 'quote " and backslash \\ and "}]{[" inside'},
    {"id": "u", "title": "Zoë", "text": "multi-byte: é, 漢字, emoji 😀, escaped \u00e9"},
    {"id": "e", "text": "escapes \\n \\\\\" end\\", "metadata": {"deep": [[{"a": [1, 2.5]}]]}},
    {"id": "n", "text": "x", "metadata": {"n": -1.5e3, "t": True, "z": None, "l": []}},
]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
@pytest.mark.parametrize("indent", [None, 2])
def test_every_chunk_size_reads_the_same_records(size: int, indent: int | None) -> None:
    """Cut into chunks of any size (through escapes, quotes and UTF-8 sequences, after
    a BOM), a list reads into the same documents as a whole-file parse."""
    data = b"\xef\xbb\xbf" + json.dumps(TRICKY, indent=indent, ensure_ascii=False).encode()
    docs, errors = split(stream(data, size))
    assert errors == []
    assert [(d.doc_id, d.title, d.text, d.metadata) for d in docs] == [
        (r["id"], r.get("title", ""), r["text"], r.get("metadata", {})) for r in TRICKY]
    assert [d.origin for d in docs] == [f"c.json[{i}]" for i in range(len(TRICKY))]


records = st.lists(st.fixed_dictionaries(
    {"id": st.text(min_size=1).filter(str.strip), "text": st.text(min_size=1).filter(str.strip)},
    optional={"title": st.text(), "metadata": st.dictionaries(
        st.text(max_size=5), st.one_of(st.integers(-10**6, 10**6), st.text(), st.booleans(),
                                       st.lists(st.text(max_size=3), max_size=3)),
        max_size=3)}), max_size=6, unique_by=lambda r: r["id"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=records, size=st.integers(1, 40), indent=st.sampled_from([None, 0, 1]),
       ascii_only=st.booleans())
def test_any_list_reads_as_json_loads_reads_it(corpus: list[dict[str, Any]], size: int,
                                               indent: int | None, ascii_only: bool) -> None:
    """For any list of valid records, any layout and any chunk size, the streamed read
    gives the records json.loads gives (lone surrogates aside: those are refused)."""
    data = json.dumps(corpus, indent=indent, ensure_ascii=ascii_only)
    try:
        encoded = data.encode("utf-8")
    except UnicodeEncodeError:  # a raw lone surrogate: not a UTF-8 file at all
        return
    items = stream(encoded, size)
    expected = json.loads(data)
    assert len(items) == len(expected)
    for item, record in zip(items, expected, strict=True):
        if isinstance(item, ReadError):
            assert "surrogate" in item.reason
        else:
            assert (item.doc_id, item.text) == (record["id"], record["text"])
            assert item.metadata == record.get("metadata", {})


# --- a bad record fails alone ------------------------------------------------------------


def test_a_malformed_record_fails_alone_naming_line_and_index() -> None:
    """Syntax errors inside records of a streamed list: each is named by its line,
    index and column in the file; the records after it are read."""
    data = (b'[{"text": "a"},\n {"text": "b" "x"},\n {"text": tru},\n'
            b' {"text": "d"}, {"text": "e\n"}, {"text": "f"}]')
    assert shown(stream(data, 4)) == [
        ("doc", "a"),
        ("c.json:2[1]", "invalid JSON: Expecting ',' delimiter (column 15)"),
        ("c.json:3[2]", "invalid JSON: Expecting value (column 11)"),
        ("doc", "d"),
        ("c.json:4[4]", "invalid JSON: Invalid control character at (column 28)"),
        ("doc", "f"),
    ]


def test_invalid_utf8_fails_its_record_alone_with_the_byte_offset() -> None:
    """Bytes that are not UTF-8 inside one record: that record names their offset."""
    data = b'[{"text": "a"}, {"text": "b\xff"}, {"text": "c"}]'
    assert shown(stream(data, 3)) == [
        ("doc", "a"), ("c.json[1]", "invalid UTF-8 at byte offset 27 (invalid start byte)"),
        ("doc", "c")]


def test_a_record_too_large_is_skipped_in_bounded_memory() -> None:
    """A record longer than any document can be is skipped (never held whole) and named
    by index and size; the next record is read."""
    options = ReadOptions(max_document_bytes=10)
    huge = json.dumps({"text": "x" * (line_limit(options) + 5)})
    data = f'[{huge}, {{"text": "after"}}]'.encode()
    assert shown(stream(data, 1000, options)) == [
        ("c.json[0]", f"record is {len(huge):,} characters of JSON, too large for a "
                      "document of at most 10 bytes (HOPINDEX_MAX_DOCUMENT_BYTES)"),
        ("doc", "after")]


@pytest.mark.parametrize(("data", "expected"), [
    (b'[{"text": "a"} {"text": "b"}]',
     [("doc", "a"), ("c.json:1", "invalid JSON: Expecting ',' delimiter (column 16)"),
      ("doc", "b")]),
    (b'[{"text": "a"},]',
     [("doc", "a"), ("c.json:1", "invalid JSON: Expecting value (column 16)")]),
    (b'[{"text": "a"}] {"text": "b"}',
     [("doc", "a"), ("c.json:1", "invalid JSON: Extra data (column 17)")]),
    (b'[{"text": "a"}, }, {"text": "c"}]',
     [("doc", "a"), ("c.json:1[1]", "invalid JSON: Expecting value (column 17)"),
      ("doc", "c")]),
    (b"[]", []),
])
def test_faults_between_records_are_named_and_reading_goes_on(
        data: bytes, expected: list[tuple[str, str]]) -> None:
    """A missing or extra comma, a stray bracket, data after the list: one error at its
    line and column, and every readable record is read."""
    assert shown(stream(data, 5)) == expected


def test_a_truncated_file_keeps_the_records_before_the_cut() -> None:
    """A list cut off inside a record (a download stopped short): the whole records are
    read; the cut one is named by index and the parser's reason."""
    whole = json.dumps([{"text": "a"}, {"text": "b" * 50}]).encode()
    items = stream(whole[:30], 7)
    assert shown(items)[0] == ("doc", "a")
    [error] = split(items)[1]
    assert error.origin == "c.json:1[1]"
    assert error.reason.startswith("invalid JSON: Unterminated string")
    assert shown(stream(whole[:15], 7)) == [
        ("doc", "a"), ("c.json:1", "invalid JSON: file ends before the list is closed (column 16)")]


def test_a_read_failure_keeps_what_was_read_and_names_the_offset() -> None:
    """A file that stops reading part way (an I/O or decompression error) is one error
    after the records read before it."""
    def failing() -> Iterator[bytes]:
        yield b'[{"text": "a"}, {"te'
        raise SourceReadError("the compressed data ends early", offset=20)

    assert shown(list(read_json_stream(failing(), SOURCE, ReadOptions()))) == [
        ("doc", "a"), ("c.json", "read failed after 20 bytes: the compressed data ends early")]
    assert issubclass(SourceReadError, InvalidInputError)


# --- the other shapes ----------------------------------------------------------------------


def test_a_large_title_object_is_read_title_by_title() -> None:
    """A HotpotQA object too large for one record is streamed: each title is a document
    or fails alone (wrong type, bad bytes, a surrogate); a record's 'text' key in it
    says why the object is not read as a record."""
    options = ReadOptions(max_document_bytes=50)
    # Past line_limit (65,936 characters here), so it cannot be one record.
    filler = {f"T{i}": [f"Sentence {i}.", " More."] for i in range(3000)}
    body = json.dumps(filler)[1:-1].encode()
    data = (b'{"Warsaw": ["Warsaw is", " in Poland."],\n "Bad": "not a list",\n'
            b' "Bytes": ["\xff"], "Sur\\ud800": ["x"], "text": "a record?", ' + body + b"}")
    items = stream(data, 4096, options)
    docs, errors = split(items)
    assert len(docs) == 3001
    assert (docs[0].title, docs[0].text, docs[0].origin) == (
        "Warsaw", "Warsaw is in Poland.", 'c.json["Warsaw"]')
    assert [(e.origin, e.reason.split(";")[0]) for e in errors] == [
        ('c.json["Bad"]', "expected a list of sentence strings under the title, got string"),
        ('c.json["Bytes"]', f"invalid UTF-8 at byte offset {data.index(BAD_BYTE)} "
                            "(invalid start byte)"),
        ('c.json["Sur\\ud800"]:title', "field 'title' holds an unpaired surrogate (U+D800) "
                                       "at character 3, which is not valid Unicode text"),
        ('c.json["text"]', "expected a list of sentence strings under the title, got string"),
    ]
    assert "read as titles mapped to sentence lists, not as one record" in errors[-1].reason


def test_a_large_title_object_with_a_broken_key_stops_there() -> None:
    """Between titles a fault leaves no way to find the next title: the titles before
    are read and one error names the line and column."""
    options = ReadOptions(max_document_bytes=20)
    body = json.dumps({f"T{i}": ["s."] for i in range(6000)})[1:-1].encode()
    items = stream(b"{" + body + b',\n "A": ["a."], B: ["b."]}', 512, options)
    docs, errors = split(items)
    assert len(docs) == 6001
    assert shown(errors) == [("c.json:2", "invalid JSON: Expecting property name enclosed "
                                          "in double quotes (column 15)")]


def test_json_lines_in_a_json_file_are_streamed_line_by_line() -> None:
    """JSON Lines under a .json name: each line fails or is read alone, named by line."""
    data = b'{"text": "a"}\n\n{"text": \n{"text": "c\xff"}\n{"text": "d"}'
    assert shown(stream(data, 3)) == [
        ("doc", "a"), ("c.json:3", "invalid JSON: Expecting value (column 10)"),
        ("c.json:4", f"invalid UTF-8 at byte offset {data.index(BAD_BYTE)} (invalid start "
                     "byte)"), ("doc", "d")]


def test_small_objects_and_other_top_levels_read_as_before(tmp_path: Path) -> None:
    """One record, a small title object, a scalar, an empty file and a broken object
    give what a whole-file parse gave."""
    cases = {
        "one.json": (b'\n  {"id": "x", "text": "Body."}\n', [("doc", "Body.")]),
        "map.json": (b'{"A": ["a", "b"]}', [("doc", "ab")]),
        "scalar.json": (b"42", [("scalar.json", "top level is a number; expected a list of "
                                                "records or an object mapping titles to "
                                                "sentence lists")]),
        "empty.json": (b"\n\n", [("empty.json:3", "invalid JSON: Expecting value (column 1)")]),
        "broken.json": (b'\n {"text": "a",\n "id" 1}',
                        [("broken.json:3", "invalid JSON: Expecting ':' delimiter (column 7)")]),
        "two.json": (b'{"text": "a"} {"text": "b"}',
                     [("two.json:1", "invalid JSON: Extra data (column 15)")]),
    }
    for name, (data, expected) in cases.items():
        (tmp_path / name).write_bytes(data)
        result = read_paths([tmp_path / name])
        got = [("doc", d.text) for d in result.documents] + [
            (e.origin.removeprefix(f"{tmp_path}/"), e.reason) for e in result.errors]
        assert got == expected, name


def test_a_huge_top_level_scalar_is_refused_without_holding_it() -> None:
    """A top level that is neither list nor object and longer than any record: refused."""
    options = ReadOptions(max_document_bytes=10)
    data = b'"' + b"x" * (line_limit(options) * 3) + b'"'
    assert shown(stream(data, 1000, options)) == [
        ("c.json", "top level starts with '\"'; expected a list of records or an object "
                   "mapping titles to sentence lists")]


def test_an_array_in_a_jsonl_file_is_streamed_with_its_line_numbers(tmp_path: Path) -> None:
    """A JSON list saved as .jsonl after blank lines is read as a list; its line numbers
    and byte offsets count from the file's start."""
    path = tmp_path / "c.jsonl"
    data = b'\n\n[{"text": "a"},\n{"text": x},\n{"text": "\xff"}]'
    path.write_bytes(data)
    result = read_paths([path])
    assert [d.text for d in result.documents] == ["a"]
    assert [(e.origin.removeprefix(str(path)), e.reason) for e in result.errors] == [
        (":4[1]", "invalid JSON: Expecting value (column 10)"),
        ("[2]", f"invalid UTF-8 at byte offset {data.index(BAD_BYTE)} (invalid start byte)")]
