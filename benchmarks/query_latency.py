"""Query latency of ``extractive`` on the 2Wiki index vs its parts alone.

Parts: query embedding + vector search + BM25 search, the work no retrieval can
skip. Each query runs the parts and the full method back to back (order
alternating) so machine noise hits both alike. Targets: p50 <= 1.5x the
parts' p50 and <= 40 ms. Needs the index built by ingest_2wiki.py.

    .venv/bin/python benchmarks/query_latency.py [--queries N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, WIKI_CORPUS, local_client, read_json, write_result

from hopindex.core.settings import Settings
from hopindex.evaluation.metrics import percentile
from hopindex.methods.base import QueryOptions

INDEX = "twowiki"
TEMPLATES = ("Who was the father of {}?", "Where was {} born?", "What is {} known for?",
             "Who directed {}?", "When did {} die?")


def wiki_questions(corpus: list[dict[str, str]], count: int) -> list[str]:
    """``count`` questions about titles spread evenly over the 2Wiki corpus, the
    templates in turn: the same list for every 2Wiki query benchmark."""
    step = max(1, len(corpus) // count)
    return [TEMPLATES[i % len(TEMPLATES)].format(r["title"])
            for i, r in enumerate(corpus[::step][:count])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    corpus = read_json(WIKI_CORPUS)
    questions = wiki_questions(corpus, args.queries)
    data_dir = OUT / "2wiki-data"
    if not data_dir.exists():
        sys.exit(f"{data_dir} is missing: run benchmarks/ingest_2wiki.py first")
    options = QueryOptions(k=10)
    with local_client(settings=Settings(data_dir=data_dir).resolved()) as client:
        # The parts alone are the engines and the embedder the method itself calls.
        b = client.service.backends
        for q in questions[:10]:  # warm caches, model and searchers
            client.query(INDEX, q, method="extractive", k=options.k, options=options)
        full_ms: list[float] = []
        parts_ms: list[float] = []
        for i, q in enumerate(questions):
            for which in ((0, 1) if i % 2 else (1, 0)):
                t0 = time.perf_counter()
                if which == 0:
                    vector = b.embedder.embed_query(q)
                    b.vectors.search_vectors(INDEX, vector, options.candidate_count)
                    b.keywords.search_text(INDEX, q, options.candidate_count)
                    parts_ms.append((time.perf_counter() - t0) * 1000)
                else:
                    client.query(INDEX, q, method="extractive", k=options.k, options=options)
                    full_ms.append((time.perf_counter() - t0) * 1000)
    figures = {
        "queries": len(questions), "k": options.k, "candidates": options.candidate_count,
        "extractive_p50_ms": percentile(full_ms, 50), "extractive_p95_ms": percentile(full_ms, 95),
        "parts_p50_ms": percentile(parts_ms, 50), "parts_p95_ms": percentile(parts_ms, 95),
    }
    figures["ratio_p50"] = figures["extractive_p50_ms"] / figures["parts_p50_ms"]
    print(f"extractive: p50 {figures['extractive_p50_ms']:.1f} ms, "
          f"p95 {figures['extractive_p95_ms']:.1f} ms (target p50 <= 40 ms)")
    print(f"parts alone: p50 {figures['parts_p50_ms']:.1f} ms, "
          f"p95 {figures['parts_p95_ms']:.1f} ms; ratio p50 {figures['ratio_p50']:.2f}x "
          "(target <= 1.5x)")
    print(f"wrote {write_result('query_latency', figures)}")


if __name__ == "__main__":
    main()
