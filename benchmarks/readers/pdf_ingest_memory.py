"""The whole ``extractive`` ingest of a 1,000-page PDF: its peak memory and wall time,
for each way of splitting the file into documents.

Target: peak RSS under 1,500 MB for 1,000 pages (the process's ``VmHWM``: interpreter,
models, engines and the ingest), whatever ``--split-by``; the reader alone is held
under 300 MB by benchmarks/readers/pdf_memory.py.

What is measured: for ``--split-by section`` (the default: one document per top-level
section, here a chapter), ``page`` and ``file``, one ``hopindex ingest --index book
--quiet --split-by MODE BOOK.pdf`` in a fresh child process with
``HOPINDEX_DATA_DIR`` set to a fresh data dir. The child runs the command's own entry
point in-process (``hopindex.api.cli:main``, what the ``hopindex`` script calls), so
that once it returns the same process can read its own ``VmHWM``; only then does it
open the data dir to count the documents and units the ingest wrote. Printed: the
command's wall and CPU seconds (user + system, every thread: on a shared machine the
load moves wall time far more than CPU), the child's wall seconds (imports included),
the documents and units, the peak RSS, and ``ru_maxrss`` beside (which a child can
inherit over fork and exec).
The baseline: the same command over a one-page PDF (the book's first page, copied
with pypdfium2): the imports, spaCy, the embedder and the engines with next to no
text through them.

Data: the book benchmarks/readers/pdf_memory.py writes and caches under
benchmarks/out/pdf-memory/ (its generator, written first when missing): 2Wiki
paragraphs in sections of three under a bookmark each, a chapter bookmark over every
ten pages. Data dirs live in a temporary folder under benchmarks/out/, deleted at the
end.

    .venv/bin/python benchmarks/readers/pdf_ingest_memory.py [--pages 1000]
        [--modes section,page,file] [--no-baseline] [--regenerate]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import OUT, high_water_mb, local_client, write_result
from pdf_memory import PAGES, generate

INDEX = "book"
MODES = ("section", "page", "file")
TARGET_PEAK_MB = 1_500


def book_path(pages: int) -> Path:
    """Where pdf_memory.py caches its book of ``pages`` pages."""
    return OUT / "pdf-memory" / f"book-{pages}-pages.pdf"


def first_page(book: Path, path: Path) -> None:
    """Copy the book's first page into a PDF of its own."""
    import pypdfium2  # type: ignore[import-untyped]  # ships no type information

    source, copy = pypdfium2.PdfDocument(book), pypdfium2.PdfDocument.new()
    try:
        copy.import_pages(source, [0])
        copy.save(path)
    finally:
        copy.close()
        source.close()


def child(mode: str, path: Path) -> None:
    """Run ``hopindex ingest`` over ``path`` in this process; print figures as JSON."""
    from hopindex.api.cli import main as cli

    started, cpu_started = time.perf_counter(), _cpu_s()
    try:
        # standalone_mode=False: return here instead of exiting, so the peak can be read.
        cli.main(["ingest", "--index", INDEX, "--quiet", "--split-by", mode, str(path)],
                 prog_name="hopindex", standalone_mode=False)
        code = 0
    except SystemExit as exc:  # the command's exit status (3: some documents failed)
        code = exc.code if isinstance(exc.code, int) else 1
    ingest_s, cpu_s = time.perf_counter() - started, _cpu_s() - cpu_started
    peak = high_water_mb()
    ru_maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # Counted after the peak is read: opening the data dir again is no part of the ingest.
    with local_client() as client:  # the data dir measure() set in the environment
        state = client.service.backends.state
        documents = len(state.document_hashes(INDEX))
        units = {kind.value: count for kind, count in state.count_units(INDEX).items()}
    print(json.dumps({"exit_code": code, "ingest_s": round(ingest_s, 1),
                      "cpu_s": round(cpu_s, 1), "documents": documents, "units": units,
                      "peak_rss_mb": round(peak), "ru_maxrss_mb": round(ru_maxrss)}))


def _cpu_s() -> float:
    """User and system CPU seconds of this process, every thread's: on a shared machine
    other processes' load moves wall time much more than the CPU the ingest spends."""
    times = os.times()
    return times.user + times.system


def measure(mode: str, path: Path, data_dir: Path) -> dict[str, Any]:
    env = {**os.environ, "HOPINDEX_DATA_DIR": str(data_dir)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--child", mode, str(path)], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"the {mode} ingest of {path.name} failed ({done.returncode}):\n"
                 f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    figures = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    figures.update(mode=mode, process_s=round(time.perf_counter() - started, 1),
                   loadavg=Path("/proc/loadavg").read_text().split()[:3])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=PAGES,
                        help=f"pages of the book (default {PAGES:,})")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"--split-by values, comma-separated (default {','.join(MODES)})")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the one-page ingest")
    parser.add_argument("--regenerate", action="store_true",
                        help="write the book again even if it is cached")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    if not modes or set(modes) - set(MODES):
        parser.error(f"--modes: {args.modes!r}; known: {','.join(MODES)}")
    book = book_path(args.pages)
    if args.regenerate or not book.exists():
        started = time.perf_counter()
        written = generate(book, args.pages)
        print(f"wrote {book} ({written['pages']:,} pages) in "
              f"{time.perf_counter() - started:.0f}s", flush=True)
    # A SIGTERM ends the run as an exception would: the temporary folder is removed and
    # a child still running is killed (subprocess.run kills it on the way out).
    signal.signal(signal.SIGTERM, _terminated)
    OUT.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="pdf-ingest-memory-", dir=OUT))
    runs: list[dict[str, Any]] = []
    baseline: dict[str, Any] | None = None
    try:
        if not args.no_baseline:
            page = folder / "page-1.pdf"
            first_page(book, page)
            baseline = measure("section", page, folder / "data-baseline")
            print(f"baseline (one page): {_line(baseline)}", flush=True)
        for mode in modes:
            runs.append(measure(mode, book, folder / f"data-{mode}"))
            print(f"--split-by {mode}: {_line(runs[-1])}", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    verdict = report(book, runs, baseline)
    path = write_result("pdf_ingest_memory", {
        "book": book.name, "file_mb": round(book.stat().st_size / 1e6, 1),
        "baseline": baseline, "runs": runs, **verdict})
    print(f"wrote {path}")


def _line(r: dict[str, Any]) -> str:
    return (f"ingest {r['ingest_s']}s (CPU {r['cpu_s']}s), process {r['process_s']}s, "
            f"{r['documents']:,} documents, units {r['units']}, peak RSS "
            f"{r['peak_rss_mb']:,} MB (ru_maxrss {r['ru_maxrss_mb']:,} MB), exit "
            f"{r['exit_code']}, load {' '.join(r['loadavg'])}")


def report(book: Path, runs: list[dict[str, Any]], baseline: dict[str, Any] | None
           ) -> dict[str, Any]:
    """Print the table and the check; the check's figures."""
    print(f"\n{book.name}: {book.stat().st_size / 1e6:.1f} MB\n")
    print("| --split-by | documents | passages | bridges | command s | CPU s | process s "
          "| peak RSS MB | over baseline MB | ru_maxrss MB | load at end (1/5/15 min) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    rows = ([("baseline: one page", baseline)] if baseline else []) + [
        (r["mode"], r) for r in runs]
    for label, r in rows:
        over = ("—" if baseline is None or r is baseline
                else f"{r['peak_rss_mb'] - baseline['peak_rss_mb']:,}")
        print(f"| {label} | {r['documents']:,} | {r['units'].get('passage', 0):,} "
              f"| {r['units'].get('bridge', 0):,} | {r['ingest_s']} | {r['cpu_s']} "
              f"| {r['process_s']} | {r['peak_rss_mb']:,} | {over} "
              f"| {r['ru_maxrss_mb']:,} | {' '.join(r['loadavg'])} |")
    peak = max(r["peak_rss_mb"] for r in runs)
    met = peak < TARGET_PEAK_MB
    failed = [r["mode"] for r in runs if r["exit_code"] != 0]
    print(f"\nhighest peak RSS {peak:,} MB (target < {TARGET_PEAK_MB:,} MB at {PAGES:,} "
          f"pages: {'met' if met else 'MISSED'})"
          + (f"; exit codes not 0: {', '.join(failed)}" if failed else ""))
    return {"peak_rss_mb": peak, "target_peak_mb": TARGET_PEAK_MB, "peak_met": met}



def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    main()
