"""The candidate document parsers side by side, before the readers commit to them.

PDF: pypdfium2, pypdf, pdfminer.six, markitdown (whose PDF path needs pdfplumber, its
``[pdf]`` extra). HTML: trafilatura (markdown, headings kept), selectolax (nav, header,
footer, aside, script, style, forms dropped; then ``<article>``, else ``<main>``, else
the body), markitdown. DOCX: python-docx, mammoth (headings read off its HTML),
markitdown. Prints markdown tables for BENCHMARKS.md; the figures go to benchmarks/out/.

Each library parses each file in a fresh child, which imports it and builds its
parser, notes its peak RSS (the baseline), parses (median of 3 runs on the small
files, 1 on the big ones) and notes the peak again: ``VmHWM``, since ``ru_maxrss``
carries over fork and exec from this large parent. Recall: the share of the source's
words (lower-cased ``\\w+`` after NFKC) found in order, each section aligned with
difflib just after the last one found, lost when under half is found. Headings kept:
the share of section titles that are, verbatim once markdown escapes are undone,
headings of the output. PDF outline: titles verbatim, pages as pypdfium2's (which the
writer's tests check against the printed headings). HTML: the share of the
boilerplate's words (in phrases the source lacks) leaked. Licence from the installed
metadata; native code: the distributions pulled in that hold shared libraries. The
scorers and these library facts are in benchmarks/readers/compare_support.py.

Data: HotpotQA-100's 994 paragraphs, a section each under its title, cycled to 3
sections a page for ``--pages`` pages (the big files; HTML and DOCX of the same
sections) and the first 50 (the small ones), written by
hopindex.testing.document_files into a temporary folder under benchmarks/out/,
deleted at the end unless ``--keep``.

    .venv/bin/python benchmarks/readers_compare.py [--pages 500] [--quick] [--keep]
"""

from __future__ import annotations

import argparse
import html
import itertools
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# common.py beside this script; the scorers and library facts in benchmarks/readers/.
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "readers"))

from common import OUT, high_water_mb, write_result
from compare_support import (
    boilerplate_leaked,
    headings_kept,
    library_info,
    recall_in_order,
    words,
)

Parse = Callable[[Path], dict[str, Any]]
LIBRARIES = {"pdf": ("pypdfium2", "pypdf", "pdfminer.six", "markitdown"),
             "html": ("trafilatura", "selectolax", "markitdown"),
             "docx": ("python-docx", "mammoth", "markitdown")}
TITLE = "Notes on HotpotQA subjects"
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _pypdfium2() -> Parse:
    import pypdfium2 as pdfium  # type: ignore[import-untyped]  # ships no type information

    def parse(path: Path) -> dict[str, Any]:
        document = pdfium.PdfDocument(path)
        # Each page and its text freed once read (pypdfium2 closes them as they go).
        texts = [page.get_textpage().get_text_range() for page in document]
        outline = [(item.get_title(), item.get_dest().get_index())
                   for item in document.get_toc()]
        document.close()
        return {"text": "\n".join(texts), "outline": outline}
    return parse


def _pypdf() -> Parse:
    from pypdf import PdfReader

    def parse(path: Path) -> dict[str, Any]:
        reader = PdfReader(path)
        text = "\n".join(page.extract_text() for page in reader.pages)
        def walk(items: list[Any]) -> list[tuple[str, int | None]]:  # nested: the levels
            return [entry for item in items for entry in (
                walk(item) if isinstance(item, list) else
                [(str(item.title), reader.get_destination_page_number(item))])]
        return {"text": text, "outline": walk(reader.outline)}
    return parse


def _pdfminer() -> Parse:
    from pdfminer.high_level import extract_text
    from pdfminer.pdfdocument import PDFDocument
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser
    from pdfminer.pdftypes import resolve1

    def parse(path: Path) -> dict[str, Any]:
        text = extract_text(path)
        outline = []
        with path.open("rb") as fh:
            document = PDFDocument(PDFParser(fh))
            pages = {page.pageid: n for n, page in enumerate(PDFPage.create_pages(document))}
            try:
                for _, title, dest, _, _ in document.get_outlines():
                    target = resolve1(dest)  # fpdf2 writes [page, /XYZ, left, top, zoom]
                    outline.append((title, pages.get(getattr(target[0], "objid", None))))
            except RecursionError:  # get_outlines recurses once per sibling bookmark
                return {"text": text, "outline": "RecursionError past ~1,000 bookmarks"}
        return {"text": text, "outline": outline}
    return parse


def _markitdown() -> Parse:
    from markitdown import MarkItDown

    converter = MarkItDown()
    return lambda path: {"text": converter.convert(path).text_content}


def _trafilatura() -> Parse:
    import trafilatura

    return lambda path: {"text": trafilatura.extract(
        path.read_text(encoding="utf-8"), output_format="markdown", include_formatting=True,
        include_comments=False) or ""}


def _selectolax() -> Parse:
    from selectolax.lexbor import LexborHTMLParser

    def parse(path: Path) -> dict[str, Any]:
        tree = LexborHTMLParser(path.read_text(encoding="utf-8"))
        for node in tree.css("nav, header, footer, aside, script, style, form, noscript"):
            node.decompose()
        root = tree.css_first("article") or tree.css_first("main") or tree.body
        nodes = root.css("h1, h2, h3, h4, h5, h6, p, li") if root is not None else []
        return _markdown([(int(node.tag[1]) if node.tag and node.tag[0] == "h" else 0,
                           node.text(separator=" ", strip=True)) for node in nodes])
    return parse


def _markdown(blocks: Sequence[tuple[int, str]]) -> dict[str, Any]:
    """(heading level or 0, text) blocks as markdown: the output every scorer reads."""
    return {"text": "\n\n".join("#" * level + " " * bool(level) + text for level, text in blocks)}


def _python_docx() -> Parse:
    import docx

    def parse(path: Path) -> dict[str, Any]:
        document = docx.Document(str(path))
        # ``paragraph.style`` looks the style up in styles.xml each time (2 s for 3,000
        # paragraphs): the names are read once, then each paragraph's style id.
        levels = {style.style_id: int(style.name.removeprefix("Heading "))
                  for style in document.styles
                  if style.name and style.name.removeprefix("Heading ").isdigit()}
        return _markdown([(levels.get(p._p.style or "", 0), p.text)
                          for p in document.paragraphs])
    return parse


def _mammoth() -> Parse:
    import mammoth  # type: ignore[import-untyped]  # ships no type information

    # mammoth's HTML is flat (one element per paragraph): its blocks are read off directly.
    block = re.compile(r"<(h[1-6]|p)>(.*?)</\1>", re.DOTALL)

    def parse(path: Path) -> dict[str, Any]:
        with path.open("rb") as fh:
            markup = mammoth.convert_to_html(fh).value
        return _markdown([(int(tag[1]) if tag[0] == "h" else 0,
                           html.unescape(re.sub(r"<[^>]+>", "", inner)))
                          for tag, inner in block.findall(markup)])
    return parse


PARSERS: dict[str, Callable[[], Parse]] = {
    "pypdfium2": _pypdfium2, "pypdf": _pypdf, "pdfminer.six": _pdfminer,
    "markitdown": _markitdown, "trafilatura": _trafilatura, "selectolax": _selectolax,
    "python-docx": _python_docx, "mammoth": _mammoth}


def child(library: str, path: Path, repeat: int, out: Path) -> None:
    """Parse ``path`` ``repeat`` times; the last output, seconds and memory as JSON."""
    parse = PARSERS[library]()
    baseline = high_water_mb()
    seconds = []
    result: dict[str, Any] = {}
    for _ in range(repeat):
        started = time.perf_counter()
        try:
            result = parse(path)
        except Exception as error:  # a library that cannot is a finding, not a crash
            # markitdown wraps the cause in a long message: its line naming the cause.
            named = [line.strip(" -").split(" with message")[0]
                     for line in str(error).splitlines() if " threw " in line]
            message = f"{type(error).__name__}: {(named or [str(error)])[-1]}"[:200]
            out.write_text(json.dumps({"error": message}))
            return
        seconds.append(time.perf_counter() - started)
    out.write_text(json.dumps({**result, "seconds": statistics.median(seconds),
                               "baseline_mb": baseline, "peak_mb": high_water_mb()}))


def measure(library: str, path: Path, repeat: int) -> dict[str, Any]:
    out = path.with_name(f"{path.name}.{library}.json")
    done = subprocess.run([sys.executable, __file__, "--child", library, str(path),
                           str(repeat), str(out)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-300:]}"}
    figures: dict[str, Any] = json.loads(out.read_text())
    out.unlink()
    return figures


def generate(folder: Path, pages: int, small: int) -> dict[str, dict[str, Any]]:
    """The files to parse, by case (``pdf-big``, ...): path, sections and the page count."""
    import pypdfium2 as pdfium

    from hopindex.testing import document_files as files

    records = itertools.islice(itertools.cycle(files.hotpot_records()), 3 * pages)
    big = [files.Section(r["title"], r["text"]) for r in records]
    cases: dict[str, dict[str, Any]] = {}
    for size, sections in (("big", big), ("small", big[:small])):
        for fmt, writer in (("pdf", files.write_pdf), ("html", files.write_html),
                            ("docx", files.write_docx)):
            path = folder / f"{size}.{fmt}"
            started = time.perf_counter()
            writer(path, sections, title=TITLE)
            case = {"path": path, "sections": sections, "write_s": time.perf_counter() - started,
                    "mb": path.stat().st_size / 1e6}
            if fmt == "pdf":
                case["pages"] = len(pdfium.PdfDocument(path))
            cases[f"{fmt}-{size}"] = case
            print(f"wrote {path.name}: {case['mb']:.2f} MB in {case['write_s']:.1f}s",
                  file=sys.stderr)
    return cases


def score(fmt: str, case: dict[str, Any], figures: dict[str, Any],
          reference_outline: list[Any] | None) -> dict[str, Any]:
    from hopindex.testing.document_files import HTML_BOILERPLATE_TEXTS

    if "error" in figures:
        return figures
    sections = case["sections"]
    source = [words(TITLE)] + [words(s.title) + words(s.text) for s in sections]
    text = figures.pop("text")
    figures["recall"] = recall_in_order(source, words(text))
    figures["headings"] = headings_kept([s.title for s in sections], _HEADING.findall(text))
    if fmt == "pdf":
        figures["pages_per_s"] = case["pages"] / figures["seconds"]
        outline = figures.pop("outline", "no")
        figures["outline"] = outline
        if not isinstance(outline, str):
            titles = [title for title, _ in outline]
            exact = sum(map(str.__eq__, titles, (s.title for s in sections)))
            agree = reference_outline is not None and [p for _, p in outline] == [
                p for _, p in reference_outline]
            figures["outline"] = (f"{exact}/{len(sections)} exact, pages "
                                  + ("agree" if agree else "differ"))
    if fmt == "html":
        figures["s_per_mb"] = figures["seconds"] / case["mb"]
        source_text = " ".join(f"{s.title} {s.text}" for s in sections)
        figures["leaked"] = boilerplate_leaked(HTML_BOILERPLATE_TEXTS, source_text, text)
    return figures


def run(cases: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for name, case in cases.items():
        fmt, size = name.split("-")
        reference = None
        for library in LIBRARIES[fmt]:
            figures = measure(library, case["path"], 1 if size == "big" else 3)
            if library == "pypdfium2" and "outline" in figures:
                reference = figures["outline"]
            results[f"{name}/{library}"] = score(fmt, case, figures, reference)
            print(f"{name} {library}: {figures.get('seconds', '-')}", file=sys.stderr)
    return results


# Per format: (heading, case size, figure, format) per column after the library's own.
_MEMORY = [("peak RSS MB big", "big", "peak_mb", ".0f"),
           ("baseline MB", "big", "baseline_mb", ".0f"), ("recall big", "big", "recall", ".3f")]
COLUMNS: dict[str, list[tuple[str, str, str, str]]] = {
    "pdf": [("pages/s big", "big", "pages_per_s", ".0f"),
            ("pages/s small", "small", "pages_per_s", ".0f"), *_MEMORY,
            ("outline with pages", "big", "outline", "")],
    "html": [("s/MB big", "big", "s_per_mb", ".2f"), ("s/MB small", "small", "s_per_mb", ".2f"),
             *_MEMORY, ("headings kept", "big", "headings", ".3f"),
             ("boilerplate leaked", "big", "leaked", ".3f")],
    "docx": [("s/file big", "big", "seconds", ".2f"), ("s/file small", "small", "seconds", ".3f"),
             *_MEMORY, ("headings kept", "big", "headings", ".3f")],
}


def table(cases: dict[str, dict[str, Any]], results: dict[str, dict[str, Any]],
          info: dict[str, dict[str, str]]) -> str:
    """One markdown table per format, each after a line saying what its files hold."""
    lines: list[str] = []
    for fmt, columns in COLUMNS.items():
        big, small = cases[f"{fmt}-big"], cases[f"{fmt}-small"]
        about_files = [f"{size} " + f"{case.get('pages')} pages, " * (fmt == "pdf")
                       + f"{len(case['sections'])} sections, {case['mb']:.2f} MB"
                       for size, case in (("big", big), ("small", small))]
        lines += [f"{fmt.upper()}: " + "; ".join(about_files) + ".", "",
                  "| library | version | licence | " + " | ".join(c[0] for c in columns)
                  + " | native code (deps) |", "|---" * (len(columns) + 4) + "|"]
        for library in LIBRARIES[fmt]:
            about = info[f"{fmt}/{library}"]
            cells = [library, about["version"], about["licence"]]
            for _, size, key, form in columns:
                figures = results[f"{fmt}-{size}/{library}"]
                error = figures.get("error", "-")
                cells.append(format(figures[key], form) if key in figures
                             else error if error not in cells else "-")
            cells.append(f"{about['native']} ({about['deps']})")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=500, help="pages of the big PDF")
    parser.add_argument("--quick", action="store_true", help="20 pages and 10 sections")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)  # LIB PATH REPEAT OUT
    args = parser.parse_args()
    if args.child:
        library, path, repeat, out = args.child
        child(library, Path(path), int(repeat), Path(out))
        return
    pages, small = (20, 10) if args.quick else (args.pages, 50)
    OUT.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="readers-", dir=OUT))
    try:
        cases = generate(folder, pages, small)
        results = run(cases)
    finally:
        if not args.keep:
            shutil.rmtree(folder)
    info = {f"{fmt}/{library}": library_info(fmt, library)
            for fmt, libraries in LIBRARIES.items() for library in libraries}
    print(table(cases, results, info))
    for case in cases.values():
        case["sections"] = len(case["sections"])
        case["path"] = case["path"].name
    print(write_result("readers_compare", {"cases": cases, "results": results,
                                           "libraries": info}), file=sys.stderr)


if __name__ == "__main__":
    main()
