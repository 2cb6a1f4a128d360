"""The ONNX embedder (fp32 and int8) against the default torch one, side by side.

Speed: the first N 2Wiki passages embedded by each embedder in a fresh subprocess,
the embedders alternating round by round (the order rotates), each measured for CPU
seconds (user + sys, the whole process: imports, model load, embedding), the embedding
alone (CPU and wall), and peak RSS; medians over the rounds and ratios to torch. The
ONNX folders are exported once first (timed) so no round pays for the export. Each
variant's rows are compared with torch's (cosine, min and mean).

Recall: ``hopindex eval`` (naive and hops) on HotpotQA-100 and on 2Wiki-100 over the
whole 6,119-passage corpus, one fresh index per embedder, HOPINDEX_EMBEDDER_URL set per
run (``--jobs`` of them at once). Recall runs first: it does not depend on machine load,
and the speed rounds that follow then run on a quiet machine. ``--reuse`` keeps an eval
report already written instead of building its index again.

    .venv/bin/python benchmarks/onnx_embedder.py [--texts 1500] [--rounds 3]
        [--corpus hotpot|2wiki|both|none] [--jobs 1] [--reuse] [--skip CORPUS:VARIANT]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, ROOT, dataset_files, high_water_mb, write_result

# Variant → embedder URL. The last one is the int8 graph fed 16 texts per run (what the
# default one text per run is compared with); it is timed, not evaluated for recall.
URLS = {
    "torch": "sentence-transformers://all-MiniLM-L6-v2",
    "onnx-fp32": "onnx://all-MiniLM-L6-v2",
    "onnx-int8": "onnx://all-MiniLM-L6-v2?quantize=int8",
    "onnx-int8-batch16": "onnx://all-MiniLM-L6-v2?quantize=int8",
}
RECALL_VARIANTS = ("torch", "onnx-fp32", "onnx-int8")
KS = ("1", "2", "5", "10")
DATA = OUT / "onnx-embedder-data"  # the ONNX cache the speed rounds share
PYTHON = sys.executable
HOPINDEX = str(Path(sys.executable).parent / "hopindex")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--texts", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--corpus", choices=("hotpot", "2wiki", "both", "none"),
                        default="both")
    parser.add_argument("--jobs", type=int, default=1, help="evals run at once")
    parser.add_argument("--reuse", action="store_true", help="keep existing eval reports")
    parser.add_argument("--skip", action="append", default=[], metavar="CORPUS:VARIANT",
                        help="an eval not to run (repeatable)")
    parser.add_argument("--child", choices=tuple(URLS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.texts)
        return
    figures: dict[str, object] = {"texts": args.texts, "rounds": args.rounds}
    corpora = {"both": ("hotpot", "2wiki"), "none": ()}.get(args.corpus, (args.corpus,))
    figures["recall"] = recall(corpora, args.jobs, args.reuse, set(args.skip))
    figures["export_s"] = export_all()
    figures["speed"] = speed(args.texts, args.rounds)
    path = write_result("onnx-embedder", figures)
    print(f"written {path}")


def export_all() -> dict[str, float]:
    """Export fp32 then int8 into DATA (each from scratch), timing each."""
    shutil.rmtree(DATA, ignore_errors=True)
    timings = {}
    for variant in ("onnx-fp32", "onnx-int8"):
        code = ("from pathlib import Path\n"
                "from hopindex.backends.registry import open_embedder\n"
                "from hopindex.core.settings import Settings\n"
                f"e = open_embedder({URLS[variant]!r}, Settings(data_dir=Path({str(DATA)!r})))\n"
                "e.model_folder()\n")
        started = time.perf_counter()
        subprocess.run([PYTHON, "-c", code], check=True, cwd=ROOT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        timings[variant] = round(time.perf_counter() - started, 1)
        print(f"export {variant}: {timings[variant]} s (process wall, incl. imports)",
              flush=True)
    return timings


def speed(texts: int, rounds: int) -> dict[str, object]:
    variants = list(URLS)
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for round_ in range(rounds):
        shift = round_ % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            out = subprocess.run([PYTHON, __file__, "--child", variant, "--texts", str(texts)],
                                 check=True, cwd=ROOT, capture_output=True, text=True)
            run = json.loads(out.stdout.strip().splitlines()[-1])
            runs[variant].append(run)
            print(f"round {round_ + 1} {variant:18s} cpu {run['process_cpu_s']:6.1f} s "
                  f"(embed {run['embed_cpu_s']:6.1f} s, wall {run['embed_wall_s']:5.1f} s) "
                  f"rss {run['peak_rss_mb']:5.0f} MB", flush=True)
    base = {key: statistics.median(r[key] for r in runs["torch"]) for key in runs["torch"][0]}
    table: dict[str, object] = {}
    torch_rows = _rows("torch")
    for variant in variants:
        med = {key: statistics.median(r[key] for r in runs[variant]) for key in base}
        cosines = (_rows(variant) * torch_rows).sum(axis=1)
        table[variant] = {
            "url": URLS[variant], "median": med,
            "ratio_to_torch": {key: round(med[key] / base[key], 3) for key in base},
            "cosine_to_torch_min": float(cosines.min()),
            "cosine_to_torch_mean": float(cosines.mean()),
            "runs": runs[variant]}
        print(f"{variant:18s} process cpu {med['process_cpu_s']:6.1f} s "
              f"({med['process_cpu_s'] / base['process_cpu_s']:.2f}x), embed cpu "
              f"{med['embed_cpu_s']:6.1f} s ({med['embed_cpu_s'] / base['embed_cpu_s']:.2f}x), "
              f"embed wall {med['embed_wall_s']:5.1f} s "
              f"({med['embed_wall_s'] / base['embed_wall_s']:.2f}x), peak rss "
              f"{med['peak_rss_mb']:5.0f} MB; cosine to torch min {cosines.min():.4f} "
              f"mean {cosines.mean():.4f}", flush=True)
    return table


def _rows(variant: str) -> np.ndarray[Any, Any]:
    return np.load(OUT / f"onnx-embedder-rows-{variant}.npy")


def child(variant: str, texts: int) -> None:
    """One measured run: import, open and embed in this fresh process."""
    corpus, _ = dataset_files("2wiki")
    passages = [f"{p['title']}\n{p['text']}"
                for p in json.loads(corpus.read_text(encoding="utf-8"))[:texts]]
    from hopindex.backends.embedder import OnnxEmbedder
    from hopindex.backends.registry import open_embedder
    from hopindex.core.settings import Settings

    embedder = open_embedder(URLS[variant], Settings(data_dir=DATA))
    if variant == "onnx-int8-batch16":
        assert isinstance(embedder, OnnxEmbedder)
        embedder = OnnxEmbedder(precision=embedder.precision, cache_dir=DATA / "models" / "onnx",
                                batch_size=16)
    embedder.embed_query("warm-up: loads the model")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    rows = embedder.embed_texts(passages)
    embed_cpu, embed_wall = time.process_time() - cpu0, time.perf_counter() - wall0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    np.save(OUT / f"onnx-embedder-rows-{variant}.npy", rows)
    print(json.dumps({"process_cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
                      "embed_cpu_s": round(embed_cpu, 2), "embed_wall_s": round(embed_wall, 2),
                      "peak_rss_mb": round(high_water_mb(), 1)}))


def recall(corpora: tuple[str, ...], jobs: int, reuse: bool,
           skip: set[str]) -> dict[str, object]:
    runs = [(corpus, variant) for corpus in corpora for variant in RECALL_VARIANTS
            if f"{corpus}:{variant}" not in skip]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        done = list(pool.map(lambda run: eval_one(*run, reuse=reuse), runs))
    results: dict[str, dict[str, object]] = {corpus: {} for corpus in corpora}
    for (corpus, variant), result in zip(runs, done, strict=True):
        results[corpus][variant] = result
        recalls = result["recall"]
        assert isinstance(recalls, dict)
        print(f"{corpus} {variant:10s} " + "  ".join(
            f"{method} R@2 {r['2']:.3f} R@5 {r['5']:.3f}" for method, r in recalls.items())
            + f"  ({result['eval_wall_s']} s)", flush=True)
    return dict(results)


def eval_one(corpus: str, variant: str, *, reuse: bool) -> dict[str, object]:
    """One ``hopindex eval`` over a fresh index built with ``variant``'s embedder."""
    corpus_path, questions_path = dataset_files(corpus)
    report = OUT / f"onnx-embedder-{corpus}-{variant}.json"
    wall_s: float | None = None
    if not (reuse and report.exists()):
        data_dir = OUT / f"onnx-embedder-{corpus}-{variant}"
        shutil.rmtree(data_dir, ignore_errors=True)
        env = {**os.environ, "HOPINDEX_DATA_DIR": str(data_dir),
               "HOPINDEX_EMBEDDER_URL": URLS[variant]}
        started = time.perf_counter()
        subprocess.run([HOPINDEX, "eval", "--index", "dev",
                        "--dataset", str(questions_path), "--corpus", str(corpus_path),
                        "--method", "naive", "--method", "hops", "--json", str(report)],
                       check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        wall_s = round(time.perf_counter() - started, 1)
    recalls = _recalls(json.loads(report.read_text(encoding="utf-8")))
    return {"url": URLS[variant], "eval_wall_s": wall_s, "recall": recalls}


def _recalls(report: dict[str, object]) -> dict[str, dict[str, float]]:
    """Method → R@k from an eval report (its ``methods`` rows)."""
    found: dict[str, dict[str, float]] = {}
    rows = report.get("methods") or report.get("results") or []
    for row in rows if isinstance(rows, list) else []:
        method, recall_at = row.get("method"), row.get("recall")
        if isinstance(method, str) and isinstance(recall_at, dict):
            found[method] = {k: float(recall_at[k]) for k in KS if k in recall_at}
    if not found:
        raise SystemExit(f"no recall rows in the eval report: {sorted(report)}")
    return found


if __name__ == "__main__":
    main()
