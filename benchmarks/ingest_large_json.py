"""A ~1 GB JSON list corpus through the readers, plain and gzipped: time and peak RSS.

Target: the reader streams, so the memory it adds to its process is bounded by a
record and a chunk of the file, not by the file: reading the 1 GB list (and its
gzipped copy) adds under 100 MB to the process's RSS.

What is measured: the path ``hopindex ingest`` reads files through, not a whole
ingest (embedding and spaCy over a 1 GB corpus would take days on this machine).
Each measurement runs in a fresh child process that imports the readers, notes its
RSS, then drains the documents, keeping none, and reports its peak RSS (``VmHWM``)
and the time taken:

- ``reader``: the ``.json`` reader alone (``read_json``: decompression, UTF-8
  decoding, cutting the list into records, the bounded parse of each, validation);
- ``iter_documents``: what ``read_paths`` runs for ingest: the suffix registry, the
  reader and the duplicate check, which remembers every id it has seen, so it grows
  with the number of documents (not with their size).

``read_paths`` then keeps every document in a list for the ingest (``client.ingest``);
that list, the corpus's text itself, is not the reader's and is not measured.

Data: the 6,119 passages of the bundled 2Wiki corpus, repeated with unique ids and
titles, written as a JSON list with one record per line until the file reaches
``--size-mb``, and a gzip copy (level 1), in a temporary folder under
benchmarks/out/ that is deleted at the end unless ``--keep``.

    .venv/bin/python benchmarks/ingest_large_json.py [--size-mb 1024] [--skip-gz] [--keep]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, WIKI_CORPUS, high_water_mb, read_json, status_mb, write_result

TARGET_ADDED_MB = 100
MODES = ("reader", "iter_documents")


def generate(folder: Path, size_mb: int, with_gz: bool) -> tuple[Path, Path | None, int]:
    """The corpus (and its gzip copy) and its record count."""
    passages = read_json(WIKI_CORPUS)
    path = folder / "corpus.json"
    packed = folder / "corpus.json.gz" if with_gz else None
    limit = size_mb * 1024 * 1024
    written = 0
    count = 0
    with ExitStack() as stack:
        sinks: list[Callable[[bytes], int]] = [stack.enter_context(path.open("wb")).write]
        if packed is not None:
            sinks.append(stack.enter_context(gzip.open(packed, "wb", compresslevel=1)).write)

        def write(data: bytes) -> None:
            for sink in sinks:
                sink(data)

        write(b"[\n")
        while written < limit:
            passage = passages[count % len(passages)]
            record = {"id": f"d{count}", "title": f"{passage['title']} ({count})",
                      "text": passage["text"], "metadata": {"source": "2wiki", "n": count}}
            line = (b"" if count == 0 else b",\n") + json.dumps(record).encode()
            write(line)
            written += len(line)
            count += 1
        write(b"\n]\n")
    return path, packed, count


def measure(path: Path, mode: str) -> dict[str, Any]:
    """One reading of ``path`` in a fresh process; its figures as JSON."""
    done = subprocess.run([sys.executable, __file__, "--child", mode, str(path)],
                          capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout))


def child(mode: str, path: Path) -> None:
    """Drain the documents of ``path`` through ``mode``; print figures as JSON."""
    from hopindex.readers import RawDocument, iter_documents, read_paths
    from hopindex.readers.base import ReadOptions, Source
    from hopindex.readers.compression import Compression
    from hopindex.readers.jsonfile import read_json as read_json_file

    read_paths([])  # the registry and every reader module imported before the baseline
    baseline_mb = status_mb("VmRSS")
    compression = Compression.GZIP if path.suffix == ".gz" else Compression.NONE
    started = time.perf_counter()
    items = (read_json_file(Source(path, str(path), path.name, compression), ReadOptions())
             if mode == "reader" else iter_documents([path]))
    documents = errors = 0
    for item in items:
        if isinstance(item, RawDocument):
            documents += 1
        else:
            errors += 1
    seconds = time.perf_counter() - started
    peak_mb = high_water_mb()
    print(json.dumps({"mode": mode, "documents": documents, "errors": errors,
                      "seconds": round(seconds, 1), "baseline_rss_mb": round(baseline_mb, 1),
                      "peak_rss_mb": round(peak_mb, 1),
                      "added_mb": round(peak_mb - baseline_mb, 1)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size-mb", type=int, default=1024, help="corpus size (default 1024)")
    parser.add_argument("--skip-gz", action="store_true", help="no gzipped variant")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return
    OUT.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="large-json-", dir=OUT))
    try:
        started = time.perf_counter()
        plain, packed, count = generate(folder, args.size_mb, not args.skip_gz)
        print(f"generated {count:,} records in {time.perf_counter() - started:.0f}s: "
              f"{plain.stat().st_size / 1e6:,.0f} MB" + (
                  f", gzipped {packed.stat().st_size / 1e6:,.0f} MB" if packed else ""))
        runs = []
        json_mb = round(plain.stat().st_size / 1e6, 1)
        for path in (plain, packed):
            if path is None:
                continue
            for mode in MODES:
                figures = measure(path, mode)
                figures.update(file=path.name, file_mb=round(path.stat().st_size / 1e6, 1),
                               json_mb=json_mb)
                complete = figures["documents"] == count and figures["errors"] == 0
                verdict = ""
                if mode == "reader":  # the duplicate check grows with the documents' count
                    figures["meets_target"] = complete and figures["added_mb"] < TARGET_ADDED_MB
                    verdict = (f" (target < {TARGET_ADDED_MB} MB added: "
                               f"{'met' if figures['meets_target'] else 'MISSED'})")
                runs.append(figures)
                print(f"{path.name} ({figures['file_mb']:,.0f} MB) {mode}: "
                      f"{figures['documents']:,} documents, {figures['errors']} errors, "
                      f"{figures['seconds']}s ({json_mb / figures['seconds']:.1f} MB of JSON "
                      f"per s), RSS {figures['baseline_rss_mb']} -> {figures['peak_rss_mb']} "
                      f"MB, +{figures['added_mb']} MB{verdict}")
        result = write_result("ingest_large_json", {"records": count, "runs": runs,
                                                    "target_added_mb": TARGET_ADDED_MB})
        print(f"wrote {result}")
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
