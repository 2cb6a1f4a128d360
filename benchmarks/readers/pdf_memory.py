"""The PDF parser's memory and speed on a long file: a 1,000-page PDF read through
``parse_pdf``, every block consumed.

Target: peak RSS under 300 MB for 1,000 pages (the process's ``VmHWM``, interpreter and
imports included), since the parser holds one page at a time.

What is measured: in a fresh child process (so no peak carries over from the parent,
which wrote the PDF), the imports (``hopindex.readers.files.pdf`` and pypdfium2) and
then ``parse_pdf`` over the file, its blocks consumed and dropped one by one as a
splitter would read them. Printed: the peak RSS after the imports (the baseline), the
peak after the parse, ``ru_maxrss`` beside (which a child can inherit from its parent
over fork and exec, hence VmHWM as the figure), the parse's seconds and pages per
second, and the blocks, headings and characters read.

Data: a book written once with fpdf2 and cached under benchmarks/out/pdf-memory/ (git
ignores benchmarks/out/): the 2Wiki corpus's paragraphs in order, as sections of three
paragraphs under their first paragraph's title (a bookmark each, about 2-3 a page), a
chapter bookmark over every ten pages, until the page count is reached. The core font
has Latin-1 only: other characters are written as "?".

    .venv/bin/python benchmarks/readers/pdf_memory.py [--pages 1000] [--regenerate]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import OUT, WIKI_CORPUS, high_water_mb, read_json, status_mb, write_result

PAGES = 1_000
TARGET_PEAK_MB = 300
PARAGRAPHS_PER_SECTION = 3
PAGES_PER_CHAPTER = 10


def _latin1(text: str) -> str:
    return " ".join(text.split()).encode("latin-1", "replace").decode("latin-1")


def generate(path: Path, pages: int) -> dict[str, int]:
    """Write the book; its page, chapter and section counts."""
    from fpdf import FPDF

    records = read_json(WIKI_CORPUS)
    pdf = FPDF(format="A4")
    pdf.set_title(f"A {pages:,}-page benchmark book")
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.add_page()
    chapters = sections = 0
    chapter_page = -PAGES_PER_CHAPTER
    number = 0
    while pdf.page < pages:
        if pdf.page - chapter_page >= PAGES_PER_CHAPTER:
            chapters += 1
            chapter_page = pdf.page
            title = f"Chapter {chapters}"
            pdf.start_section(title, level=0)
            pdf.set_font("helvetica", "B", size=16)
            pdf.multi_cell(0, 9, title, new_x="LMARGIN", new_y="NEXT")
        group = [records[(number + i) % len(records)] for i in range(PARAGRAPHS_PER_SECTION)]
        number += PARAGRAPHS_PER_SECTION
        sections += 1
        title = _latin1(f"{chapters}.{sections} {group[0]['title']}")
        pdf.start_section(title, level=1)
        pdf.set_font("helvetica", "B", size=12)
        pdf.multi_cell(0, 7, title, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("helvetica", size=10)
        for record in group:
            pdf.multi_cell(0, 5, _latin1(record["text"]), new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    pdf.output(str(partial))
    partial.replace(path)
    return {"pages": pdf.page, "chapters": chapters, "sections": sections}


def child(path: Path) -> None:
    """Parse ``path``, consuming its blocks; print figures as JSON."""
    from hopindex.readers.files.model import Block, FileInput
    from hopindex.readers.files.pdf import parse_pdf
    from hopindex.readers.options import FileLimits

    baseline = high_water_mb()
    file = FileInput(path=path, origin=str(path), head=path.read_bytes()[:8192])
    started = time.perf_counter()
    parsed = parse_pdf(file, FileLimits())
    blocks = headings = chars = problems = 0
    for item in parsed.blocks:
        if isinstance(item, Block):
            blocks += 1
            headings += item.is_heading
            chars += len(item.text)
        else:
            problems += 1
    seconds = time.perf_counter() - started
    pages = parsed.pages or 0
    print(json.dumps({
        "pages": pages, "heading_levels": len(parsed.heading_levels), "blocks": blocks,
        "headings": headings, "chars": chars, "page_problems": problems,
        "parse_s": round(seconds, 2), "pages_per_s": round(pages / seconds),
        "baseline_mb": round(baseline, 1), "peak_rss_mb": round(high_water_mb(), 1),
        "rss_now_mb": round(status_mb("VmRSS"), 1),
        "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))


def measure(path: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "--child", str(path)],
                          capture_output=True, text=True, check=False, env=os.environ.copy())
    if done.returncode != 0:
        sys.exit(f"the parse of {path.name} failed ({done.returncode}):\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=PAGES,
                        help=f"pages of the book (default {PAGES:,})")
    parser.add_argument("--runs", type=int, default=3, help="parses, each in a fresh process")
    parser.add_argument("--regenerate", action="store_true",
                        help="write the book again even if it is cached")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    path = OUT / "pdf-memory" / f"book-{args.pages}-pages.pdf"
    book: dict[str, Any] = {}
    if args.regenerate or not path.exists():
        started = time.perf_counter()
        book = generate(path, args.pages)
        print(f"wrote {path} ({book['pages']:,} pages, {book['chapters']:,} chapters, "
              f"{book['sections']:,} sections) in {time.perf_counter() - started:.0f}s")
    size_mb = path.stat().st_size / 1e6
    runs = [measure(path) for _ in range(args.runs)]
    print(f"\n{path.name}: {size_mb:.1f} MB\n")
    print("| run | pages | headings | blocks | characters | parse s | pages/s "
          "| baseline MB | peak RSS MB | ru_maxrss MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for number, r in enumerate(runs, 1):
        print(f"| {number} | {r['pages']:,} | {r['headings']:,} | {r['blocks']:,} "
              f"| {r['chars']:,} | {r['parse_s']} | {r['pages_per_s']:,} | {r['baseline_mb']} "
              f"| {r['peak_rss_mb']} | {r['ru_maxrss_mb']} |")
    peak = max(r["peak_rss_mb"] for r in runs)
    met = peak < TARGET_PEAK_MB
    print(f"\npeak RSS {peak} MB at {runs[0]['pages']:,} pages (target < {TARGET_PEAK_MB} MB "
          f"at {PAGES:,}: {'met' if met else 'MISSED'}); the parse adds "
          f"{peak - runs[0]['baseline_mb']:.1f} MB over the imports")
    result = write_result("pdf_memory", {"file_mb": round(size_mb, 1), "book": book,
                                         "runs": runs, "peak_rss_mb": peak,
                                         "target_peak_mb": TARGET_PEAK_MB, "peak_met": met})
    print(f"wrote {result}")


if __name__ == "__main__":
    main()
