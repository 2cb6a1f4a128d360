"""A large JSON list is read in bounded memory: a 50 MB corpus, plain and gzipped,
goes through the reader while Python's allocations stay under a fifth of the file,
which holding the file's bytes alone (let alone its text and parsed records) would
exceed."""

from __future__ import annotations

import gzip
import json
import shutil
import tracemalloc
from pathlib import Path

import pytest

from hopindex.readers import Compression, RawDocument, ReadError
from hopindex.readers.base import ReadOptions, Source
from hopindex.readers.jsonfile import read_json

FILE_BYTES = 50_000_000
PEAK_BYTES = FILE_BYTES // 5


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A ~50 MB JSON list of 10 KB records, one per line; and its record count."""
    path = tmp_path_factory.mktemp("big") / "corpus.json"
    words = " ".join(f"word{i % 97}" for i in range(1200))
    count = 0
    written = 0
    with path.open("w", encoding="utf-8") as fh:
        fh.write("[\n")
        while written < FILE_BYTES:
            record = json.dumps({"id": f"d{count}", "title": f"Title {count}",
                                 "text": f"{count} {words}", "metadata": {"n": count}})
            line = ("" if count == 0 else ",\n") + record
            fh.write(line)
            written += len(line)
            count += 1
        fh.write("\n]\n")
    return path, count


def peak_of_reading(source: Source) -> tuple[int, int]:
    """(documents read, peak traced bytes) for one pass that keeps no document."""
    read = 0
    tracemalloc.start()
    try:
        for item in read_json(source, ReadOptions()):
            assert not isinstance(item, ReadError), item
            read += isinstance(item, RawDocument)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return read, peak


def test_a_50_mb_list_is_read_in_bounded_memory(big_corpus: tuple[Path, int]) -> None:
    """Every record is read and the peak stays under FILE_BYTES / 5."""
    path, count = big_corpus
    assert path.stat().st_size > FILE_BYTES
    read, peak = peak_of_reading(Source(path, str(path), path.name))
    assert read == count
    assert peak < PEAK_BYTES, f"peak {peak:,} bytes"


def test_a_gzipped_50_mb_list_is_read_in_bounded_memory(big_corpus: tuple[Path, int],
                                                        tmp_path: Path) -> None:
    """Through gzip too: every record is read and the peak stays under FILE_BYTES / 5."""
    path, count = big_corpus
    packed = tmp_path / "corpus.json.gz"
    with path.open("rb") as raw, gzip.open(packed, "wb", compresslevel=1) as out:
        shutil.copyfileobj(raw, out)
    read, peak = peak_of_reading(Source(packed, str(packed), packed.name, Compression.GZIP))
    assert read == count
    assert peak < PEAK_BYTES, f"peak {peak:,} bytes"
