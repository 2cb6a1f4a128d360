"""``hops`` against ``naive`` and ``extractive`` on both development sets, with the
ablation of each of its ideas, and its latency paired with ``naive``'s.

For HotpotQA-100 (its own 994 paragraphs) and 2Wiki-100 (over the whole 6,119-passage
2Wiki corpus): one ``extractive`` index each (built on the first run, reused after),
then every variant over the same 100 questions, through the evaluation code
``hopindex eval`` runs. Latency: on the 2Wiki index, ``naive`` and ``hops`` asked each
question in turn (order alternating), three rounds; target p50 ratio <= 2.

    .venv/bin/python benchmarks/hops_eval.py [--corpus hotpot|2wiki|both] [--rounds N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, dataset_files, local_client, write_result

from hopindex.api.client.local import LocalClient
from hopindex.evaluation.datasets import DatasetFormat, load_questions
from hopindex.evaluation.metrics import percentile
from hopindex.evaluation.runner import evaluate_method

# Each idea alone and combined; the first three rows are the comparison itself.
VARIANTS = {
    "naive": "naive",
    "extractive": "extractive",
    "hops (default: named + walk)": "hops",
    "hop 1 alone (= extractive)": "hops:named=off,walk=off",
    "named titles alone": "hops:walk=off",
    "bridge walk alone": "hops:named=off",
    "dense feedback alone": "hops:named=off,walk=off,feedback=dense",
    "named + walk + feedback": "hops:feedback=dense",
    "walk with siblings (sibling_factor=0.5)": "hops:sibling_factor=0.5",
    "rrf_k=5 (hop 1 order kept more)": "hops:rrf_k=5",
    "walk_weight=1": "hops:walk_weight=1",
}
KS = (1, 2, 5, 10, 20)
FORMATS = {"hotpot": DatasetFormat.HOTPOTQA, "2wiki": DatasetFormat.TWOWIKI}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", choices=("hotpot", "2wiki", "both"), default="both")
    parser.add_argument("--rounds", type=int, default=3, help="paired latency rounds")
    args = parser.parse_args()
    corpora = ("hotpot", "2wiki") if args.corpus == "both" else (args.corpus,)
    figures: dict[str, object] = {}
    for corpus in corpora:
        figures[corpus] = run_corpus(corpus, args.rounds)
    write_result("hops-eval", figures)


def run_corpus(corpus: str, rounds: int) -> dict[str, object]:
    corpus_path, questions_path = dataset_files(corpus)
    data_dir = OUT / f"hops-{corpus}-data"
    # The environment's settings (a broker, say) with this corpus's data folder.
    with local_client(data_dir) as client:
        index = "dev"
        if client.service.backends.state.get_index(index) is None:
            started = time.perf_counter()
            # Not waited for in the call: the wait below caps a build on workers at 2 h.
            job = client.ingest(index, [corpus_path], method="extractive", wait=False)
            job = client.jobs.wait_for_job(job.job_id, timeout_s=7200)
            print(f"{corpus}: built {index} ({job.state.value}) in "
                  f"{time.perf_counter() - started:.1f}s", flush=True)
        questions = load_questions(questions_path, FORMATS[corpus])
        rows: dict[str, object] = {}
        for label, spec in VARIANTS.items():
            # The evaluation code `hopindex eval` runs, over the client's service.
            report, _ = evaluate_method(client.service, index, questions, spec, ks=KS)
            rows[label] = {"spec": spec, "recall": report.recall,
                           "p50_ms": report.latency_p50_ms, "p95_ms": report.latency_p95_ms}
            print(f"{corpus} {label:42s} " + " ".join(f"{report.recall[k]:.3f}" for k in KS)
                  + f"  p50 {report.latency_p50_ms:.1f} ms", flush=True)
        latency = paired_latency(client, index, [q.question for q in questions], rounds)
        print(f"{corpus} paired p50: hops {latency['hops_p50_ms']:.1f} ms, naive "
              f"{latency['naive_p50_ms']:.1f} ms, ratio {latency['ratio']:.2f} "
              "(target <= 2 on 2wiki)", flush=True)
        return {"variants": rows, "paired_latency": latency}


def paired_latency(client: LocalClient, index: str, questions: list[str],
                   rounds: int) -> dict[str, float]:
    times: dict[str, list[float]] = {"hops": [], "naive": []}
    for round_ in range(rounds):
        for i, question in enumerate(questions):
            order = ("hops", "naive") if (i + round_) % 2 == 0 else ("naive", "hops")
            for method in order:
                started = time.perf_counter()
                client.query(index, question, method=method, k=10)
                times[method].append(time.perf_counter() - started)
    hops = percentile(times["hops"], 50) * 1000
    naive = percentile(times["naive"], 50) * 1000
    return {"hops_p50_ms": hops, "naive_p50_ms": naive, "ratio": hops / naive,
            "hops_p95_ms": percentile(times["hops"], 95) * 1000,
            "naive_p95_ms": percentile(times["naive"], 95) * 1000}


if __name__ == "__main__":
    main()
