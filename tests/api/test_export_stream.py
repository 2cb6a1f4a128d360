"""Writing an export a server streams (``hopindex export --api``): a whole stream becomes
the file and its end record's counts; one cut short, or of another index, leaves no
file behind, not even the partial one."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest

from hopindex.api import transfer_format as fmt
from hopindex.api.transfer import TransferSummary, save_export
from hopindex.backends.protocols import IndexInfo
from hopindex.core.errors import BackendUnavailableError, InvalidInputError

COUNTS = {"index": "wiki", "documents": 1, "units": 0, "vectors": 0, "mentions": 0,
          "groups": 0, "records": 0}


def stream(index: str = "wiki") -> list[str]:
    header = fmt.header_record(IndexInfo(name=index, method="extractive", created_at=1.0),
                               "sentence-transformers://all-MiniLM-L6-v2")
    document = {"type": "document", "doc_id": "d0", "title": "T", "text": "x",
                "content_hash": "h", "metadata": {}}
    return [fmt.record_line(r) for r in (header, document, {"type": "end", "counts": COUNTS})]


def test_a_whole_stream_is_written_as_it_came(tmp_path: Path) -> None:
    """The file holds the lines as sent (gzipped for .gz); the summary is the end
    record's counts."""
    path = tmp_path / "wiki.jsonl.gz"
    summary = save_export(iter(stream()), path, "wiki")
    assert summary == TransferSummary(index="wiki", documents=1)
    assert gzip.decompress(path.read_bytes()).decode() == "".join(stream())
    assert [p.name for p in tmp_path.iterdir()] == ["wiki.jsonl.gz"]


@pytest.mark.parametrize(("lines", "error"), [
    (stream()[:2], BackendUnavailableError),
    ([], BackendUnavailableError),
    (stream("other"), BackendUnavailableError),
    (["{\"id\": \"d1\"}\n"], InvalidInputError),
], ids=["cut-short", "empty", "another-index", "not-an-export"])
def test_a_broken_stream_leaves_no_file(tmp_path: Path, lines: list[str],
                                        error: type[Exception]) -> None:
    path = tmp_path / "wiki.jsonl"
    with pytest.raises(error):
        save_export(iter(lines), path, "wiki")
    assert list(tmp_path.iterdir()) == []


def test_an_error_while_streaming_leaves_no_file(tmp_path: Path) -> None:
    """A connection that fails mid-way raises through, and the partial file goes."""
    def lines() -> Iterator[str]:
        yield stream()[0]
        raise BackendUnavailableError("cut")

    with pytest.raises(BackendUnavailableError, match="cut"):
        save_export(lines(), tmp_path / "wiki.jsonl", "wiki")
    assert list(tmp_path.iterdir()) == []
