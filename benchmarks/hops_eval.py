"""``hops`` against ``naive`` and ``extractive`` on the three development sets, with the
ablation of each of its ideas, and its latency paired with ``naive``'s.

For HotpotQA-100 (its own 994 paragraphs), 2Wiki-100 (over the whole 6,119-passage
2Wiki corpus) and MuSiQue-dev (200 questions of 2 to 4 hops over their 3,363
paragraphs): one ``extractive`` index each (built on the first run, reused after),
then every variant over the same questions, through the evaluation code ``hopindex
eval`` runs. Latency: ``naive`` and ``hops`` asked each question in turn (order
alternating), three rounds; target p50 ratio <= 2.5 on the 2Wiki index.

    .venv/bin/python benchmarks/hops_eval.py [--corpus hotpot|2wiki|musique|all] [--rounds N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, dataset_files, local_client, write_result

from hopindex.api.client.local import LocalClient
from hopindex.evaluation.datasets import DatasetFormat, corpus_from_questions, load_questions
from hopindex.evaluation.metrics import percentile
from hopindex.evaluation.runner import evaluate_method

# Each idea alone and combined; the first three rows are the comparison itself.
VARIANTS = {
    "naive": "naive",
    "extractive": "extractive",
    "hops (default)": "hops",
    "hop 1 alone (= extractive)": "hops:named=off,walk=off,chain=off",
    "named titles alone": "hops:walk=off,chain=off",
    "bridge walk alone": "hops:named=off,chain=off",
    "named + walk, 3 seeds (the former default)": "hops:seeds=3,chain=off",
    "named + walk, 1 seed": "hops:chain=off",
    "+ hop 3 through bridges (the default)": "hops:chain=bridges",
    "+ hops 3 and 4 through bridges": "hops:chain_hops=4",
    "hop 3 at deep_weight=0.3": "hops:deep_weight=0.3",
    "co-mention search, hop 2 only": "hops:chain=mentions,chain_hops=2",
    "co-mention search, hops 2 and 3 (chain=mentions)": "hops:chain=mentions",
    "dense feedback": "hops:feedback=dense",
    "walk with siblings (sibling_factor=0.5)": "hops:sibling_factor=0.5",
    "walk_weight=1": "hops:walk_weight=1",
}
KS = (1, 2, 5, 10, 20)
FORMATS = {"hotpot": DatasetFormat.HOTPOTQA, "2wiki": DatasetFormat.TWOWIKI,
           "musique": DatasetFormat.MUSIQUE}
CORPORA = tuple(FORMATS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", choices=(*CORPORA, "all"), default="all")
    parser.add_argument("--rounds", type=int, default=3, help="paired latency rounds")
    args = parser.parse_args()
    corpora = CORPORA if args.corpus == "all" else (args.corpus,)
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
            if corpus == "musique":
                # Its corpus is its questions' paragraphs, as `hopindex eval` reads them
                # without --corpus (several paragraphs of one article share a title).
                job = client.service.ingest_documents(
                    index, corpus_from_questions(questions_path, FORMATS[corpus]),
                    method="extractive")
            else:
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
              "(target <= 2.5 on 2wiki)", flush=True)
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
