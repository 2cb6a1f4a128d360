"""One long document through the default ingest (``extractive``): 1, 2, 5 and 10 MB.

Targets: memory bounded per document, time in proportion to it. Peak RSS at 10 MB at
most 1,500 MB (the process's ``VmHWM``, models included), and seconds per MB within
±30 % of their mean at every size (the spread is printed).

What is measured: each size in a fresh child process (so no peak carries over), which
opens the client over a fresh data dir, loads spaCy and the embedder, then times
``client.ingest`` of one ``.txt`` file holding the text; the ingest's seconds
exclude the model loads, whose few seconds would weigh on the small sizes only. The
child also reports how long spaCy and the embedder ran inside the ingest.

Data: the 6,119 paragraphs of the bundled 2Wiki corpus (2.6 MB), one blank line
between two, taken in order, then again in a seeded shuffle for each further pass
(so that no passage repeats), while the text stays within the size (MB: 1,000,000
bytes of UTF-8, the unit of ``HOPINDEX_MAX_DOCUMENT_BYTES``). Files and data dirs live
in a temporary folder under benchmarks/out/, deleted at the end unless ``--keep``.

    .venv/bin/python benchmarks/big_document.py [--sizes 1 2 5 10] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, WIKI_CORPUS, high_water_mb, local_client, read_json, write_result

INDEX = "big"
SIZES_MB = (1, 2, 5, 10)
TARGET_PEAK_MB = 1_500
TARGET_AT_MB = 10
TARGET_SPREAD = 0.30


def generate(path: Path, size_mb: int) -> int:
    """Write a text of at most ``size_mb`` MB of paragraphs; its size in bytes."""
    paragraphs = [record["text"].strip().encode() for record in read_json(WIKI_CORPUS)]
    limit = size_mb * 1_000_000
    parts: list[bytes] = []
    size = 0
    number = 0
    order = list(range(len(paragraphs)))
    while True:
        if number and number % len(paragraphs) == 0:
            # Each pass over the corpus in another order: repeated in the same order, the
            # passages would repeat too, and the embed step embeds a text once per batch.
            random.Random(number).shuffle(order)
        paragraph = paragraphs[order[number % len(paragraphs)]]
        added = len(paragraph) + (2 if parts else 0)
        if size + added > limit:
            break
        parts.append(paragraph)
        size += added
        number += 1
    path.write_bytes(b"\n\n".join(parts))
    return size


def measure(path: Path, data_dir: Path) -> dict[str, Any]:
    """One ingest of ``path`` in a fresh process; its figures as JSON, with the process's
    wall time."""
    env = {**os.environ, "HOPINDEX_DATA_DIR": str(data_dir)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--child", str(path)], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"the ingest of {path.name} failed ({done.returncode}):\n{done.stderr}")
    figures = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    figures["process_s"] = round(time.perf_counter() - started, 1)
    return figures


def _timed(call: Callable[..., Any], spent: list[float]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started
    return run


def _cpu_s() -> float:
    """User and system CPU seconds of this process, every thread's."""
    times = os.times()
    return times.user + times.system


def child(path: Path) -> None:
    """Ingest ``path`` into a fresh index; print figures as JSON."""
    from hopindex.core.models import JobState

    with local_client() as client:  # the data dir measure() set in the environment
        backends = client.service.backends
        nlp, embedder = backends.nlp, backends.embedder
        nlp.analyze_texts(["Warm up the pipeline."])
        embedder.embed_texts(["Warm up the model."])
        nlp_s, embed_s = [0.0], [0.0]
        # The phases reach both through these same objects (backends open each once).
        nlp.analyze_texts = _timed(nlp.analyze_texts, nlp_s)  # type: ignore[method-assign]
        embedder.embed_texts = _timed(embedder.embed_texts, embed_s)  # type: ignore[method-assign]
        started, cpu_started = time.perf_counter(), _cpu_s()
        job = client.ingest(INDEX, [path], method="extractive")
        ingest_s, cpu_s = time.perf_counter() - started, _cpu_s() - cpu_started
        if job.state is not JobState.SUCCEEDED or job.errors:
            sys.exit(f"job {job.job_id} {job.state.value}: {job.errors[:3]}")
        state = backends.state
        units = state.count_units(INDEX)
        passages = {u.text for u in state.units_of_documents(INDEX, sorted(
            state.document_hashes(INDEX)))}
    print(json.dumps({"ingest_s": round(ingest_s, 1), "cpu_s": round(cpu_s, 1),
                      "spacy_s": round(nlp_s[0], 1),
                      "embed_s": round(embed_s[0], 1), "peak_rss_mb": round(high_water_mb()),
                      "units": {kind.value: count for kind, count in units.items()},
                      "distinct_passages": len(passages)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES_MB),
                        help="text sizes in MB (default 1 2 5 10)")
    parser.add_argument("--keep", action="store_true", help="keep the texts and data dirs")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    OUT.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="big-document-", dir=OUT))
    runs = []
    try:
        for size_mb in args.sizes:
            text = folder / f"text-{size_mb}mb" / f"book-{size_mb}mb.txt"
            text.parent.mkdir()
            size = generate(text, size_mb)
            figures = measure(text, folder / f"data-{size_mb}mb")
            figures.update(size_mb=size_mb, bytes=size,
                           s_per_mb=round(figures["ingest_s"] / (size / 1e6), 1),
                           cpu_s_per_mb=round(figures["cpu_s"] / (size / 1e6), 1))
            runs.append(figures)
            print(f"{size_mb} MB: ingest {figures['ingest_s']}s ({figures['s_per_mb']} s/MB, "
                  f"CPU {figures['cpu_s_per_mb']} s/MB; "
                  f"spaCy {figures['spacy_s']}s, embedding {figures['embed_s']}s), process "
                  f"{figures['process_s']}s, peak RSS {figures['peak_rss_mb']:,} MB, "
                  f"units {figures['units']}, distinct passages "
                  f"{figures['distinct_passages']:,}", flush=True)
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    verdict = report(runs)
    path = write_result("big_document", {"runs": runs, **verdict})
    print(f"wrote {path}")


def report(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Print the table and the checks; the checks' figures."""
    mean = sum(r["s_per_mb"] for r in runs) / len(runs)
    print("\n| MB | bytes | passages | ingest s | s/MB | vs mean | CPU s/MB | spaCy s "
          "| embedding s | process s | peak RSS MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        print(f"| {r['size_mb']} | {r['bytes']:,} | {r['distinct_passages']:,} "
              f"| {r['ingest_s']} | {r['s_per_mb']} | {r['s_per_mb'] / mean - 1:+.0%} "
              f"| {r['cpu_s_per_mb']} | {r['spacy_s']} | {r['embed_s']} | {r['process_s']} "
              f"| {r['peak_rss_mb']:,} |")
    spread = max(abs(r["s_per_mb"] / mean - 1) for r in runs)
    # CPU seconds are printed beside: on a shared machine other processes' load moves
    # wall time much more than the CPU this process spends.
    cpu_mean = sum(r["cpu_s_per_mb"] for r in runs) / len(runs)
    cpu_spread = max(abs(r["cpu_s_per_mb"] / cpu_mean - 1) for r in runs)
    largest = max(runs, key=lambda r: r["size_mb"])
    peak_ok = largest["size_mb"] < TARGET_AT_MB or largest["peak_rss_mb"] <= TARGET_PEAK_MB
    print(f"\nseconds per MB: mean {mean:.1f}, spread ±{spread:.0%} (target ±"
          f"{TARGET_SPREAD:.0%}: {'met' if spread <= TARGET_SPREAD else 'MISSED'}); CPU "
          f"seconds per MB: mean {cpu_mean:.1f}, spread ±{cpu_spread:.0%}; peak RSS "
          f"at {largest['size_mb']} MB {largest['peak_rss_mb']:,} MB (target <= "
          f"{TARGET_PEAK_MB:,} MB at {TARGET_AT_MB} MB: {'met' if peak_ok else 'MISSED'})")
    return {"mean_s_per_mb": round(mean, 1), "spread": round(spread, 3),
            "mean_cpu_s_per_mb": round(cpu_mean, 1), "cpu_spread": round(cpu_spread, 3),
            "spread_met": spread <= TARGET_SPREAD, "peak_met": peak_ok,
            "target_peak_mb": TARGET_PEAK_MB, "target_spread": TARGET_SPREAD}


if __name__ == "__main__":
    main()
