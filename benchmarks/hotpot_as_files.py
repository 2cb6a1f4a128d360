"""HotpotQA-100 written as PDF, DOCX and HTML files against the same corpus ingested as
records: the files' retrieval and their citations.

Target (PDF): R@5 within 0.01 of the records build for ``naive`` and ``hops``, every
file read (no read errors), and every gold passage a query returns cited with the
file, page and section it was written to.

What is measured: the bundled corpus (994 paragraphs) ingested as records (index
``records``), then laid out by ``hopindex.testing.document_files.hotpot_files``, one
section per paragraph headed by its title, ``--per-file`` paragraphs a file, in each
format of ``--formats``, a folder a format, each folder ingested into its own index
(``pdf``, ``docx``, ``html``); all ``extractive``, the default with no LLM, through one
in-process client over one data dir. Per format: files written and the seconds to write
them, the ingest's wall seconds (the read of the folder and the job), the documents
read, the read and job errors, and how faithfully the files read back: the documents
titled with a paragraph's title verbatim and, of those, the ones whose text is the
paragraph's once whitespace is collapsed (a PDF breaks lines). Then ``naive`` and
``hops`` over the 100 questions through ``evaluate_method`` (the code ``hopindex eval``
runs), gold passages matched by title in every build so that all are measured alike
(the records build by text too, to show the two agree there). Citations: each question
asked of each file index with ``hops``, k = 10; every passage in the top 10 whose title
is one of the question's gold titles must be cited with the file the paragraph was
written to, its title as the section and, in a PDF, the page its bookmark points at
(read back from the outline with pypdfium2, as a person following the citation would).

Files and the data dir live in a temporary folder under benchmarks/out/, deleted at
the end; ``--keep DIR`` works in DIR (new or empty: over an earlier run's data dir
the ingests would skip every unchanged document) and leaves it. The load average is
printed at the start and the end: the machine may be shared.

    .venv/bin/python benchmarks/hotpot_as_files.py [--formats pdf,docx,html]
        [--per-file 40] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, dataset_files, local_client, write_result

from hopindex.api.client.local import LocalClient
from hopindex.core.models import JobState
from hopindex.core.settings import Settings
from hopindex.evaluation.datasets import DatasetFormat, Question, load_questions
from hopindex.evaluation.runner import GoldMatch, evaluate_method
from hopindex.testing.document_files import hotpot_files, hotpot_records, outline_pages

FORMATS = ("pdf", "docx", "html")
METHODS = ("naive", "hops")
KS = (1, 2, 5, 10)
PER_FILE = 40
RECORDS = "records"
TARGET_DELTA = 0.01


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--formats", default=",".join(FORMATS),
                        help=f"file formats, comma-separated (default {','.join(FORMATS)})")
    parser.add_argument("--per-file", type=int, default=PER_FILE,
                        help=f"paragraphs a file (default {PER_FILE})")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="write the files and the data dir in DIR and leave them there")
    args = parser.parse_args()
    formats = [name.strip() for name in args.formats.split(",") if name.strip()]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown or not formats:
        parser.error(f"--formats: {unknown or 'none given'}; known: {','.join(FORMATS)}")
    if args.keep is not None:
        if args.keep.exists() and any(args.keep.iterdir()):
            parser.error(f"--keep: {args.keep} is not empty")
        args.keep.mkdir(parents=True, exist_ok=True)
        folder = args.keep
    else:
        OUT.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="hotpot-as-files-", dir=OUT))
    # A SIGTERM ends the run as an exception would: the temporary folder is removed and
    # a child still running is killed (subprocess.run kills it on the way out).
    signal.signal(signal.SIGTERM, _terminated)
    load_start = _loadavg()
    print(f"load average at the start: {load_start}", flush=True)
    try:
        figures = run(folder, formats, args.per_file)
    finally:
        if args.keep is not None:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    figures["loadavg"] = {"start": load_start, "end": _loadavg()}
    print(f"load average at the end: {figures['loadavg']['end']}")
    path = write_result("hotpot_as_files", figures)
    print(f"wrote {path}")


def _loadavg() -> str:
    """The 1, 5 and 15-minute load averages, as /proc/loadavg gives them."""
    loadavg = Path("/proc/loadavg")
    return " ".join(loadavg.read_text().split()[:3]) if loadavg.exists() else "unknown"


def run(folder: Path, formats: list[str], per_file: int) -> dict[str, Any]:
    corpus_path, questions_path = dataset_files("hotpot")
    questions = load_questions(questions_path, DatasetFormat.HOTPOTQA)
    paragraphs = hotpot_records()
    with local_client(settings=Settings(data_dir=folder / "data").resolved()) as client:
        builds = {RECORDS: ingest(client, RECORDS, corpus_path)}
        print(f"records: ingest {builds[RECORDS]['ingest_s']}s, "
              f"{builds[RECORDS]['documents']:,} documents", flush=True)
        where: dict[str, dict[str, Path]] = {}
        for name in formats:
            files_dir = folder / name
            started = time.perf_counter()
            written = hotpot_files(paragraphs, files_dir, per_file=per_file, formats=(name,))
            write_s = time.perf_counter() - started
            # hotpot_files fills each file with the next per_file paragraphs, in order.
            where[name] = {p["title"]: written[n // per_file] for n, p in enumerate(paragraphs)}
            builds[name] = {"files": len(written), "write_s": round(write_s, 2),
                            **ingest(client, name, files_dir, paragraphs)}
            b = builds[name]
            print(f"{name}: {b['files']} files written in {b['write_s']}s; ingest "
                  f"{b['ingest_s']}s (read {b['read_s']}s), {b['documents']:,} documents, "
                  f"{b['read_errors']} read errors, {b['job_errors']} job errors; "
                  f"{b['titles_verbatim']:,} titles verbatim, {b['texts_equal']:,} texts "
                  "equal", flush=True)
            if b["titles_changed"]:
                print(f"  titles read otherwise: {b['titles_changed']}", flush=True)
        recall = evaluate(client, questions, [RECORDS, *formats])
        citations = {name: check_citations(client, name, questions, where[name])
                     for name in formats}
    return report(builds, recall, citations, formats, per_file)


def ingest(client: LocalClient, index: str, source: Path,
           paragraphs: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """Read ``source`` and ingest it into ``index``; the figures. Read and job are the
    two halves of ``client.ingest``, apart here to count what the readers gave, and
    with ``paragraphs`` how many documents came back with a paragraph's title verbatim
    and, of those, with its text (whitespace aside: a PDF breaks lines)."""
    started = time.perf_counter()
    read = client.read_source([source])
    read_s = time.perf_counter() - started
    job = client.ingest_read(index, read, method="extractive")
    ingest_s = time.perf_counter() - started
    if job.state is not JobState.SUCCEEDED:
        sys.exit(f"the {index} ingest ended {job.state.value}: {job.reason} {job.errors[:3]}")
    for error in read.errors[:3]:
        print(f"  {index} read error: {error}", flush=True)
    figures: dict[str, Any] = {
        "ingest_s": round(ingest_s, 1), "read_s": round(read_s, 1),
        "documents": len(read.documents), "read_errors": len(read.errors),
        "job_errors": len(job.errors)}
    if paragraphs is not None:
        texts = {p["title"]: " ".join(p["text"].split()) for p in paragraphs}
        titled = [d for d in read.documents if d.title in texts]
        figures["titles_verbatim"] = len(titled)
        figures["texts_equal"] = sum(" ".join(d.text.split()) == texts[d.title]
                                     for d in titled)
        figures["titles_changed"] = sorted(d.title for d in read.documents
                                           if d.title not in texts)[:10]
    return figures


def evaluate(client: LocalClient, questions: list[Question], indexes: list[str]
             ) -> dict[str, dict[str, dict[int, float]]]:
    """Recall@k by index and method; the records build also by text (``records/text``)."""
    recall: dict[str, dict[str, dict[int, float]]] = {}
    runs = [(index, GoldMatch.TITLE) for index in indexes]
    runs.insert(1, (RECORDS, GoldMatch.TEXT))
    for index, match in runs:
        label = index if match is GoldMatch.TITLE else f"{index}/{match.value}"
        recall[label] = {}
        for method in METHODS:
            result, _ = evaluate_method(client.service, index, questions, method, ks=KS,
                                        match=match)
            recall[label][method] = result.recall
            print(f"{label:13s} {method:5s} " + " ".join(
                f"R@{k} {result.recall[k]:.3f}" for k in KS), flush=True)
    return recall


def check_citations(client: LocalClient, index: str, questions: list[Question],
                    where: dict[str, Path]) -> dict[str, Any]:
    """Every gold passage in each question's top 10 (``hops``) against the file, section
    and (PDF) page its paragraph was written to; counts and the first few wrong."""
    is_pdf = bool(where) and next(iter(where.values())).suffix == ".pdf"
    pages = ({title: page for path in set(where.values())
              for title, page in outline_pages(path).items()}
             if is_pdf else {})
    checked = correct = 0
    wrong: list[str] = []
    for question in questions:
        gold = {passage.split("\n", 1)[0] for passage in question.gold_passages}
        for passage in client.query(index, question.question, method="hops", k=10).passages:
            if passage.title not in gold:
                continue
            checked += 1
            citation = passage.citation
            expected = (where[passage.title].name, passage.title, pages.get(passage.title))
            got = (None if citation is None else
                   (citation.file, citation.section, citation.page if is_pdf else None))
            if got == expected:
                correct += 1
            elif len(wrong) < 5:
                wrong.append(f"{passage.title!r}: cited {got}, written {expected}")
    print(f"{index} citations: {correct:,} of {checked:,} right", flush=True)
    for line in wrong:
        print(f"  {line}")
    return {"checked": checked, "correct": correct, "wrong_examples": wrong}


def report(builds: dict[str, dict[str, Any]], recall: dict[str, dict[str, dict[int, float]]],
           citations: dict[str, dict[str, Any]], formats: list[str], per_file: int
           ) -> dict[str, Any]:
    """Print the tables and the verdict; everything as the result file's figures."""
    print("\n| build | method | R@1 | R@2 | R@5 | R@10 | ΔR@5 vs records |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for label, methods in recall.items():
        shown = "records (gold by text)" if label == f"{RECORDS}/text" else label
        for method, r in methods.items():
            delta = r[5] - recall[RECORDS][method][5]
            print(f"| {shown} | {method} | " + " | ".join(f"{r[k]:.3f}" for k in KS)
                  + f" | {'—' if label == RECORDS else f'{delta:+.3f}'} |")
    print(f"\n| format | files ({per_file} paragraphs each) | write s | ingest s | read s "
          "| documents read | read errors | job errors | titles verbatim | texts equal "
          "| citations checked | right |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in formats:
        b, c = builds[name], citations[name]
        print(f"| {name} | {b['files']} | {b['write_s']} | {b['ingest_s']} | {b['read_s']} "
              f"| {b['documents']:,} | {b['read_errors']} | {b['job_errors']} "
              f"| {b['titles_verbatim']:,} | {b['texts_equal']:,} "
              f"| {c['checked']:,} | {c['correct']:,} |")
    records = builds[RECORDS]
    print(f"\nrecords build: ingest {records['ingest_s']}s, {records['documents']:,} "
          "documents")
    verdicts: dict[str, bool] = {}
    for name in formats:
        deltas = {m: recall[name][m][5] - recall[RECORDS][m][5] for m in METHODS}
        verdicts[name] = (all(abs(d) <= TARGET_DELTA + 1e-9 for d in deltas.values())
                          and builds[name]["read_errors"] == 0
                          and citations[name]["correct"] == citations[name]["checked"])
        print(f"{name}: ΔR@5 " + ", ".join(f"{m} {d:+.3f}" for m, d in deltas.items())
              + f"; {builds[name]['read_errors']} read errors; citations "
              f"{citations[name]['correct']}/{citations[name]['checked']} "
              f"({'the target' if name == 'pdf' else 'the PDF bar'}: "
              f"{'met' if verdicts[name] else 'MISSED'})")
    return {"per_file": per_file, "builds": builds, "recall": recall, "citations": citations,
            "met": verdicts, "target_delta_r5": TARGET_DELTA}



def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    main()
