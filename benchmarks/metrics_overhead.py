"""What Prometheus metrics add to query latency: query_latency.py's benchmark with metrics
on and off, side by side in one run.

Two clients, over two services sharing one set of backends (the 2Wiki index of
ingest_2wiki.py), one with HOPINDEX_METRICS=on, one with off; each question runs on
both back to back, order alternating, so machine noise hits both alike. Target: p50
with metrics at most 2% above p50 without. The recording alone (the histograms one
query feeds) is also timed in a tight loop: the part of the difference metrics can be
blamed for.

    .venv/bin/python benchmarks/metrics_overhead.py [--queries N]

Builds the index (one ingest of the 2Wiki corpus, ~5 min) when ingest_2wiki.py has
not.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, WIKI_CORPUS, local_client, read_json, write_result
from query_latency import INDEX, wiki_questions

from hopindex.api.client.local import LocalClient
from hopindex.api.service import Hopindex
from hopindex.core.settings import MetricsMode, Settings
from hopindex.evaluation.metrics import percentile
from hopindex.methods.base import QueryOptions
from hopindex.monitoring.queries import PrometheusQueryRecorder
from hopindex.readers import RawDocument, ReadResult

METHOD = "extractive"
RECORD_LOOPS = 20_000


def ensure_index(data_dir: Path, corpus: list[dict[str, str]]) -> None:
    """Ingest the corpus unless every document is in: an index another process is still
    building (its documents land at its end) is completed, or fails on the engines' lock,
    rather than measured half-built."""
    settings = Settings(data_dir=data_dir).resolved()
    with local_client(settings=settings) as client:
        # A document's hash is set when its job finishes (empty until then).
        hashes = client.service.backends.state.document_hashes(INDEX)
        if len(hashes) >= len(corpus) and all(hashes.values()):
            return
        print(f"building the {INDEX} index in {data_dir} (ingest_2wiki.py's first ingest)",
              flush=True)
        records = [RawDocument(doc_id=None, title=r["title"], text=r["text"], metadata={},
                               origin=f"corpus.json[{i}]") for i, r in enumerate(corpus)]
        client.ingest_read(INDEX, ReadResult(documents=records))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=600)
    args = parser.parse_args()
    corpus = read_json(WIKI_CORPUS)
    questions = wiki_questions(corpus, args.queries)
    data_dir = OUT / "2wiki-data"
    ensure_index(data_dir, corpus)
    options = QueryOptions(k=10)
    settings = Settings(data_dir=data_dir).resolved()
    with local_client(settings=settings) as metered:
        # Same backends, metrics off: only the recording differs between the two. No
        # opener shares another client's backends, so this one is built over a second
        # service; both are asked through the client alike. Not closed: its backends
        # are the first client's, closed with it.
        bare = LocalClient(Hopindex(replace(settings, metrics=MetricsMode.OFF),
                                    backends=metered.service.backends))
        clients = {"on": metered, "off": bare}
        for q in questions[:10]:  # warm caches, model and searchers
            for client in clients.values():
                client.query(INDEX, q, method=METHOD, k=options.k, options=options)
        ms: dict[str, list[float]] = {"on": [], "off": []}
        last = None
        for i, q in enumerate(questions):
            for which in (("on", "off") if i % 2 else ("off", "on")):
                t0 = time.perf_counter()
                last = clients[which].query(INDEX, q, method=METHOD, k=options.k,
                                            options=options)
                ms[which].append((time.perf_counter() - t0) * 1000)
    assert last is not None
    # The recording a query pays, alone: every histogram one extractive query feeds.
    recorder = PrometheusQueryRecorder()
    t0 = time.perf_counter()
    for _ in range(RECORD_LOOPS):
        recorder.record_query(last)
    record_us = (time.perf_counter() - t0) / RECORD_LOOPS * 1e6
    paired = [on / off for on, off in zip(ms["on"], ms["off"], strict=True)]
    figures = {
        "queries": len(questions), "method": METHOD, "k": options.k,
        "p50_on_ms": percentile(ms["on"], 50), "p50_off_ms": percentile(ms["off"], 50),
        "p95_on_ms": percentile(ms["on"], 95), "p95_off_ms": percentile(ms["off"], 95),
        "median_paired_ratio": statistics.median(paired),
        "record_us_per_query": record_us,
    }
    figures["p50_overhead_pct"] = (figures["p50_on_ms"] / figures["p50_off_ms"] - 1) * 100
    figures["record_pct_of_p50"] = record_us / 1000 / figures["p50_off_ms"] * 100
    print(f"{METHOD}, {len(questions)} queries: p50 {figures['p50_on_ms']:.2f} ms with metrics, "
          f"{figures['p50_off_ms']:.2f} ms without: {figures['p50_overhead_pct']:+.2f}% "
          f"(target < 2%); median of per-question ratios {figures['median_paired_ratio']:.4f}")
    print(f"p95 {figures['p95_on_ms']:.2f} ms with, {figures['p95_off_ms']:.2f} ms without")
    print(f"recording alone: {record_us:.1f} us per query = "
          f"{figures['record_pct_of_p50']:.3f}% of p50")
    print(f"wrote {write_result('metrics_overhead', figures)}")


if __name__ == "__main__":
    main()
