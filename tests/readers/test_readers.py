"""Input readers: every accepted format, and every kind of bad input as a named ReadError."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from hopindex.core.errors import InvalidInputError
from hopindex.core.ids import doc_id_from_title
from hopindex.readers import (
    RawDocument,
    ReadError,
    accepted_suffixes,
    iter_documents,
    read_paths,
)
from hopindex.readers.json_line import LINE_SLACK_BYTES

HOTPOT_CORPUS = (Path(__file__).resolve().parents[2] / "hopindex" / "sample" / "hotpotqa-100"
                 / "corpus.json")


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def only_error(errors: list[ReadError]) -> ReadError:
    assert len(errors) == 1, errors
    return errors[0]


# --- formats ---------------------------------------------------------------------------


def test_jsonl_records_with_id_title_text_metadata(tmp_path: Path) -> None:
    """JSONL records keep id, title, text and metadata; unknown keys land in metadata."""
    path = write_jsonl(tmp_path / "corpus.jsonl", [
        {"id": "d1", "title": "Paris", "text": "Paris is in France.", "metadata": {"lang": "en"}},
        {"id": 7, "text": "No title here.", "url": "https://x", "metadata": {"url": "kept"}},
    ])
    result = read_paths([path])
    assert result.errors == []
    first, second = result.documents
    assert first == RawDocument(doc_id="d1", title="Paris", text="Paris is in France.",
                                metadata={"lang": "en"}, origin=f"{path}:1")
    assert second.doc_id == "7"
    assert second.title == ""
    # The explicit metadata object wins over a top-level key of the same name.
    assert second.metadata == {"url": "kept"}
    assert second.origin == f"{path}:2"


def test_ndjson_suffix_and_blank_lines(tmp_path: Path) -> None:
    """.ndjson is JSON Lines too, and blank lines between records are not errors."""
    path = tmp_path / "c.NDJSON"
    path.write_text('{"text": "one"}\n\n   \n{"text": "two"}\n', encoding="utf-8")
    result = read_paths([path])
    assert result.errors == []
    assert [d.text for d in result.documents] == ["one", "two"]
    assert result.documents[1].origin == f"{path}:4"


def test_id_aliases_underscore_id_and_doc_id(tmp_path: Path) -> None:
    """`_id` and `doc_id` are accepted as the id; agreeing duplicates are fine, conflicts not."""
    path = write_jsonl(tmp_path / "c.jsonl", [
        {"_id": "a", "text": "x"},
        {"doc_id": "b", "text": "y"},
        {"id": "c", "doc_id": "c", "text": "z"},
        {"id": "d", "_id": "e", "text": "w"},
    ])
    result = read_paths([path])
    assert [d.doc_id for d in result.documents] == ["a", "b", "c"]
    error = only_error(result.errors)
    assert error.origin == f"{path}:4:_id"
    assert "disagree" in error.reason


def test_json_list_of_records(tmp_path: Path) -> None:
    """A .json list of records reads each one, with origin file[index]."""
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"id": "a", "title": "A", "text": "alpha"},
                                {"title": "B", "text": "beta", "metadata": {"k": 1}}]))
    result = read_paths([path])
    assert result.errors == []
    assert [(d.doc_id, d.title, d.text) for d in result.documents] == [
        ("a", "A", "alpha"), (None, "B", "beta")]
    assert result.documents[1].metadata == {"k": 1}
    assert result.documents[1].origin == f"{path}[1]"


def test_json_title_text_corpus_2wiki_style(tmp_path: Path) -> None:
    """The 2Wiki/MuSiQue corpus shape, a list of {title, text}, keeps text byte for byte."""
    path = tmp_path / "corpus.json"
    records = [{"title": "Teutberga", "text": "Teutberga( died 875) was a queen. "},
               {"title": "Lothair II", "text": "Lothair II was a king."}]
    path.write_text(json.dumps(records))
    result = read_paths([path])
    assert result.errors == []
    assert [(d.title, d.text) for d in result.documents] == [
        (r["title"], r["text"]) for r in records]


def test_json_hotpotqa_title_to_sentences_object(tmp_path: Path) -> None:
    """An object {title: [sentences]} joins sentences with "" (they carry their own spaces)."""
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps({"Alû": ["Alû is a demon.", " It is Akkadian."],
                                "Bad": "not a list"}))
    result = read_paths([path])
    doc = result.documents[0]
    assert (doc.doc_id, doc.title, doc.text) == (None, "Alû", "Alû is a demon. It is Akkadian.")
    assert doc.origin == f'{path}["Alû"]'
    error = only_error(result.errors)
    assert error.origin == f'{path}["Bad"]'
    assert "list of sentence strings" in error.reason


def test_real_hotpotqa_corpus_reads_all_994_paragraphs() -> None:
    """The shipped HotpotQA corpus reads cleanly into 994 documents with joined sentences."""
    result = read_paths([HOTPOT_CORPUS])
    raw = json.loads(HOTPOT_CORPUS.read_text(encoding="utf-8"))
    assert result.errors == []
    assert len(result.documents) == 994
    assert {d.title: d.text for d in result.documents} == {
        t: "".join(s) for t, s in raw.items()}


def test_json_paragraph_text_records(tmp_path: Path) -> None:
    """MuSiQue-style {title, paragraph_text} records read paragraph_text as the text."""
    path = tmp_path / "paras.json"
    path.write_text(json.dumps([{"idx": 3, "title": "T", "paragraph_text": "P body.",
                                 "is_supporting": True}]))
    result = read_paths([path])
    assert result.errors == []
    doc = result.documents[0]
    assert (doc.title, doc.text) == ("T", "P body.")
    assert doc.metadata == {"idx": 3, "is_supporting": True}


def test_json_single_record_object(tmp_path: Path) -> None:
    """A .json holding one record object (string text) is one document, not a title map."""
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"id": "x", "title": "One", "text": "Body."}))
    result = read_paths([path])
    assert result.errors == []
    assert [(d.doc_id, d.text, d.origin) for d in result.documents] == [("x", "Body.", str(path))]


def test_json_lines_content_under_json_name(tmp_path: Path) -> None:
    """JSON Lines saved as .json is detected by content and read per line."""
    path = write_jsonl(tmp_path / "actually_lines.json", [{"text": "a"}, {"text": "b"}])
    result = read_paths([path])
    assert result.errors == []
    assert [(d.text, d.origin) for d in result.documents] == [
        ("a", f"{path}:1"), ("b", f"{path}:2")]


def test_json_array_content_under_jsonl_name(tmp_path: Path) -> None:
    """A pretty-printed JSON array saved as .jsonl is detected and read as one array."""
    path = tmp_path / "array.jsonl"
    path.write_text(json.dumps([{"text": "a"}, {"text": "b"}], indent=2))
    result = read_paths([path])
    assert result.errors == []
    assert [(d.text, d.origin) for d in result.documents] == [
        ("a", f"{path}[0]"), ("b", f"{path}[1]")]


def test_folder_of_text_and_markdown_files(tmp_path: Path) -> None:
    """Folders are walked recursively in sorted order; ids are folder-relative paths;
    a Markdown title is its first H1 (not one inside a code fence), else the stem."""
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD.txt").write_text("hidden tool state")
    (root / "b.txt").write_text("Plain text body.\n")
    (root / "a.md").write_text("\n# Alpha Title #\n\nAlpha body.\n")
    (root / "sub" / "c.markdown").write_text("```sh\n# not a title\n```\nno heading here\n")
    (root / "sub" / "d.md").write_text("Intro line.\n# Late Heading\nMore.\n")
    result = read_paths([root])
    assert result.errors == []
    got = [(d.doc_id, d.title, d.text, d.origin) for d in result.documents]
    assert got == [
        ("a.md", "Alpha Title", "Alpha body.", str(root / "a.md")),
        ("b.txt", "b", "Plain text body.", str(root / "b.txt")),
        ("sub/c.markdown", "c", "```sh\n# not a title\n```\nno heading here",
         str(root / "sub" / "c.markdown")),
        # A heading below other content names the document but stays in its text, as
        # its own paragraph (the text of every format's headings, without markup).
        ("sub/d.md", "Late Heading", "Intro line.\n\nLate Heading\n\nMore.",
         str(root / "sub" / "d.md")),
    ]


def test_single_text_file_uses_file_name_as_id(tmp_path: Path) -> None:
    """A text file named directly is identified by its file name, with CRLF normalised."""
    path = tmp_path / "memo.md"
    path.write_bytes(b"# Memo\r\nLine one.\r\nLine two.\r\n")
    doc = read_paths([path]).documents[0]
    assert (doc.doc_id, doc.title, doc.text) == ("memo.md", "Memo", "Line one.\nLine two.")


def test_utf8_bom_is_stripped_in_every_format(tmp_path: Path) -> None:
    """A UTF-8 BOM does not break JSON parsing nor leak into titles or text."""
    bom = b"\xef\xbb\xbf"
    (tmp_path / "a.jsonl").write_bytes(bom + b'{"title": "J", "text": "jl"}\n')
    (tmp_path / "b.json").write_bytes(bom + b'[{"title": "K", "text": "js"}]')
    (tmp_path / "c.md").write_bytes(bom + "# Héading\nbody".encode())
    result = read_paths([tmp_path])
    assert result.errors == []
    assert [(d.title, d.text) for d in result.documents] == [
        ("J", "jl"), ("K", "js"), ("Héading", "body")]


def test_jsonl_is_streamed_line_by_line(tmp_path: Path) -> None:
    """The first JSONL record is yielded before the rest of the file exists: the reader
    streams. A FIFO stands in for a large file; a whole-file reader would block on it."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs a POSIX FIFO")
    fifo = tmp_path / "stream.jsonl"
    os.mkfifo(fifo)
    first_received = threading.Event()
    signalled: list[bool] = []

    def writer() -> None:
        with fifo.open("w", encoding="utf-8") as fh:
            fh.write('{"id": "1", "text": "first"}\n')
            fh.flush()
            signalled.append(first_received.wait(timeout=5))
            fh.write('{"id": "2", "text": "second"}\n')

    # Daemon with a bounded join: a reader that never opens the FIFO must not hang the suite.
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    items = iter_documents([fifo])
    first = next(items)
    first_received.set()
    rest = list(items)
    thread.join(timeout=10)
    assert signalled == [True]
    assert isinstance(first, RawDocument)
    assert first.text == "first"
    assert [d.text for d in rest if isinstance(d, RawDocument)] == ["second"]


# --- bad input ---------------------------------------------------------------------------


def test_malformed_jsonl_line_is_reported_and_others_read(tmp_path: Path) -> None:
    """A malformed JSONL line yields `file:LINE: invalid JSON: ...`; its neighbours still read."""
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "ok 1"}\n{"text": "broken",\n{"text": "ok 3"}\n')
    result = read_paths([path])
    assert [d.text for d in result.documents] == ["ok 1", "ok 3"]
    error = only_error(result.errors)
    assert str(error).startswith(f"{path}:2: invalid JSON: ")


def test_invalid_json_record_names_the_line_and_index(tmp_path: Path) -> None:
    """A record of a .json list that does not parse is one error naming the line of the
    fault and the record's index; the other records are read."""
    path = tmp_path / "c.json"
    path.write_text('[\n{"text": "a"},\n{"text": }\n, {"text": "c"}]')
    result = read_paths([path])
    assert [d.text for d in result.documents] == ["a", "c"]
    error = only_error(result.errors)
    assert error.origin == f"{path}:3[1]"
    assert error.reason == "invalid JSON: Expecting value (column 10)"


def test_record_without_text_names_the_field(tmp_path: Path) -> None:
    """A record without `text` is an error naming file, line and the field."""
    path = write_jsonl(tmp_path / "c.jsonl", [{"title": "T"}, {"text": "fine"}])
    result = read_paths([path])
    assert [d.text for d in result.documents] == ["fine"]
    error = only_error(result.errors)
    assert error.origin == f"{path}:1:text"
    assert "missing field 'text'" in error.reason


def test_record_with_non_string_text_names_the_field_and_type(tmp_path: Path) -> None:
    """Non-string text (a number, a list) is an error naming the field and the JSON type."""
    path = write_jsonl(tmp_path / "c.jsonl", [{"text": 42}, {"text": ["a"]}])
    result = read_paths([path])
    assert result.documents == []
    assert [(e.origin, e.reason) for e in result.errors] == [
        (f"{path}:1:text", "field 'text' must be a string, got number"),
        (f"{path}:2:text", "field 'text' must be a string, got array"),
    ]


def test_bad_title_id_and_metadata_types_name_their_fields(tmp_path: Path) -> None:
    """Wrongly typed title, id and metadata, and non-object records, each name what is wrong."""
    path = write_jsonl(tmp_path / "c.jsonl", [
        {"title": 5, "text": "x"}, {"id": True, "text": "x"},
        {"metadata": [1], "text": "x"}, ["text"]])
    origins = [e.origin for e in read_paths([path]).errors]
    assert origins == [f"{path}:1:title", f"{path}:2:id", f"{path}:3:metadata", f"{path}:4"]


def test_empty_text_is_an_error(tmp_path: Path) -> None:
    """Empty or whitespace-only text is an error, in JSON records and in text files."""
    path = write_jsonl(tmp_path / "c.jsonl", [{"text": "  \n"}])
    (tmp_path / "empty.md").write_text("# Only a title\n\n")
    result = read_paths([path, tmp_path / "empty.md"])
    assert result.documents == []
    assert [(e.origin, e.reason) for e in result.errors] == [
        (f"{path}:1:text", "field 'text' is empty"),
        (str(tmp_path / "empty.md"), "document text is empty"),
    ]


def test_document_over_max_bytes_names_record_and_size(tmp_path: Path) -> None:
    """Text over max_document_bytes (counted in UTF-8 bytes) is refused, naming record and size."""
    path = write_jsonl(tmp_path / "c.jsonl", [{"id": "big", "text": "é" * 6},
                                              {"id": "fits", "text": "e" * 10}])
    (tmp_path / "big.txt").write_text("x" * 11)
    result = read_paths([path, tmp_path / "big.txt"], max_document_bytes=10)
    assert [d.doc_id for d in result.documents] == ["fits"]
    first, second = result.errors
    # Six characters but twelve bytes: the limit is on bytes.
    assert first.origin == f"{path}:1"
    assert "'big'" in first.reason
    assert "12 bytes" in first.reason
    assert second.origin == str(tmp_path / "big.txt")
    assert "11 bytes" in second.reason


def test_runaway_jsonl_line_is_skipped_without_parsing(tmp_path: Path) -> None:
    """A line far past the size any valid record can have is skipped and reported by size."""
    path = tmp_path / "c.jsonl"
    huge = '{"text": "' + "x" * (LINE_SLACK_BYTES + 1000) + '"}\n'
    path.write_text(huge + '{"text": "after"}\n')
    result = read_paths([path], max_document_bytes=10)
    assert [d.text for d in result.documents] == ["after"]
    error = only_error(result.errors)
    assert error.origin == f"{path}:1"
    assert f"{len(huge):,} bytes" in error.reason


def test_invalid_utf8_jsonl_is_per_line_with_offset(tmp_path: Path) -> None:
    """Invalid UTF-8 in one JSONL line costs only that line; the error gives the byte offset."""
    path = tmp_path / "c.jsonl"
    line1 = b'{"text": "good"}\n'
    path.write_bytes(line1 + b'{"text": "bad \xff"}\n{"text": "also good"}\n')
    result = read_paths([path])
    assert [d.text for d in result.documents] == ["good", "also good"]
    error = only_error(result.errors)
    assert error.origin == f"{path}:2"
    assert f"invalid UTF-8 at byte offset {len(line1) + 14}" in error.reason


def test_invalid_utf8_gives_the_byte_offset(tmp_path: Path) -> None:
    """Invalid UTF-8 rejects the record of a .json list holding it, or the text file,
    naming the byte offset; the other records and files are read."""
    (tmp_path / "a.json").write_bytes(b'[{"text": "\xc3\x28"}, {"id": "a1", "text": "ok"}]')
    (tmp_path / "b.txt").write_bytes(b"fine\nthen \xfe")
    (tmp_path / "c.txt").write_text("readable")
    result = read_paths([tmp_path])
    assert [d.doc_id for d in result.documents] == ["a1", "c.txt"]
    assert [(e.origin, e.reason.split(" (")[0]) for e in result.errors] == [
        (str(tmp_path / "a.json") + "[0]", "invalid UTF-8 at byte offset 11"),
        (str(tmp_path / "b.txt"), "invalid UTF-8 at byte offset 10"),
    ]


def test_lone_surrogate_escape_is_an_error(tmp_path: Path) -> None:
    """A JSON escape for a lone surrogate parses but is not storable text: named as an error."""
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "a \\ud800 b"}\n')
    error = only_error(read_paths([path]).errors)
    assert error.origin == f"{path}:1:text"
    assert "surrogate" in error.reason


def test_unknown_file_type_names_file_and_accepted_types(tmp_path: Path) -> None:
    """An unsupported file type is reported with the accepted types; other paths still read."""
    pdf = tmp_path / "paper.pdf"
    pdf.write_bytes(b"%PDF")
    good = write_jsonl(tmp_path / "c.jsonl", [{"text": "x"}])
    result = read_paths([pdf, good])
    assert len(result.documents) == 1
    error = only_error(result.errors)
    assert error.origin == str(pdf)
    assert "'.pdf'" in error.reason
    for suffix in accepted_suffixes():
        assert suffix in error.reason


def test_missing_path_is_an_error_not_an_exception(tmp_path: Path) -> None:
    """A path that does not exist is one ReadError; the other paths are still read."""
    good = write_jsonl(tmp_path / "c.jsonl", [{"text": "x"}])
    missing = tmp_path / "nope.jsonl"
    result = read_paths([missing, good])
    assert len(result.documents) == 1
    assert only_error(result.errors) == ReadError(str(missing), "no such file or directory")


def test_empty_folder_is_reported(tmp_path: Path) -> None:
    """A folder with nothing to read says so instead of silently ingesting nothing."""
    (tmp_path / "empty").mkdir()
    error = only_error(read_paths([tmp_path / "empty"]).errors)
    assert "no files" in error.reason


@pytest.mark.parametrize("content", ['"just a string"', "42", "null", "true"])
def test_json_top_level_scalar_is_an_error(tmp_path: Path, content: str) -> None:
    """A .json whose top level is neither list nor object is refused with its JSON type."""
    path = tmp_path / "c.json"
    path.write_text(content)
    result = read_paths([path])
    assert result.documents == []
    error = only_error(result.errors)
    assert error.origin == str(path)
    assert error.reason.startswith("top level is a ")
    assert "expected a list" in error.reason


def test_duplicate_ids_keep_first_and_name_both_origins(tmp_path: Path) -> None:
    """A repeated id keeps the first record; each later one is an error naming both origins."""
    a = write_jsonl(tmp_path / "a.jsonl", [{"id": "x", "text": "first"},
                                           {"id": "y", "text": "other"}])
    b = write_jsonl(tmp_path / "b.jsonl", [{"id": "x", "text": "second"},
                                           {"id": "x", "text": "third"}])
    result = read_paths([a, b])
    assert [d.text for d in result.documents] == ["first", "other"]
    assert [e.origin for e in result.errors] == [f"{b}:1", f"{b}:2"]
    for error in result.errors:
        assert "duplicate id 'x'" in error.reason
        assert f"{a}:1" in error.reason


def test_records_sharing_a_title_keep_each_text(tmp_path: Path) -> None:
    """Records without ids are identified by title: another text under a title (an article
    split into paragraphs) is kept as a document of its own (the title's id with ``#n``),
    the same text again is a duplicate naming the first; a record with an id equal to
    that title is a different document, and reading again gives the same ids."""
    path = write_jsonl(tmp_path / "c.jsonl", [
        {"title": "Same", "text": "one"}, {"title": "Same", "text": "two"},
        {"title": " Same", "text": "one "}, {"title": "Same", "text": "three"},
        {"id": "Same", "title": "Same", "text": "three"}, {"text": "no id, no title"},
        {"text": "no id, no title"}])
    result = read_paths([path])
    title_id = doc_id_from_title("Same")
    assert [(d.doc_id, d.text) for d in result.documents] == [
        (None, "one"), (f"{title_id}#2", "two"), (f"{title_id}#3", "three"),
        ("Same", "three"), (None, "no id, no title"), (None, "no id, no title")]
    error = only_error(result.errors)
    assert error.origin == f"{path}:3"
    assert "duplicate record: title ' Same' with the same text" in error.reason
    assert f"{path}:1" in error.reason
    assert [d.doc_id for d in read_paths([path]).documents] == [
        d.doc_id for d in result.documents]


def test_unknown_file_inside_folder_is_reported(tmp_path: Path) -> None:
    """Inside a folder, files of other types are reported, never silently dropped."""
    (tmp_path / "a.txt").write_text("text")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    result = read_paths([tmp_path])
    assert [d.doc_id for d in result.documents] == ["a.txt"]
    assert only_error(result.errors).origin == str(tmp_path / "image.png")


def test_nonpositive_limit_is_rejected() -> None:
    """A max_document_bytes below 1 is a caller error, named by the setting."""
    with pytest.raises(InvalidInputError, match="max_document_bytes"):
        read_paths([], max_document_bytes=0)


def test_unlistable_subfolder_is_reported(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A subfolder that cannot be listed is an error naming it; readable files still read.
    (The permission failure is simulated: tests may run as root, which can list anything.)"""
    (tmp_path / "a.txt").write_text("readable")
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "b.txt").write_text("unreachable")
    real_scandir = os.scandir

    def scandir(path: Any) -> Any:
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(locked))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = read_paths([tmp_path])
    assert [d.doc_id for d in result.documents] == ["a.txt"]
    error = only_error(result.errors)
    assert error.origin == str(locked)
    assert error.reason == "cannot list folder: Permission denied"
