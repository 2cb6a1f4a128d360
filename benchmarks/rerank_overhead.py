"""What the reranker stage adds to a query: ``naive`` and ``extractive`` on the 2Wiki
index with a reranker reordering the top 20 fused candidates, rerank=on against off.

The reranker is a /rerank service: the LLM test server's ``/v1/rerank`` in a process
of its own on loopback (Cohere wire, ``rerank_top_n`` 20; ``--server-in-thread`` runs
it in this process instead, sharing the query's GIL). Its scoring is a word-set
overlap that costs nothing, so the overhead measured is hopindex's own (building the 20
texts, the hand-off to the reranker's event loop, the request and its JSON both ways,
the limiter, the reorder, the trace) plus one loopback HTTP round trip: NOT a
cross-encoder's inference time, which no trained weights here can measure (a real
reranker adds its own, which depends on its model and hardware).

Each question (``query_latency.py``'s templated questions over the 2Wiki corpus, k=10)
is asked with rerank=on and rerank=off back to back, the order alternating, for each
method. Two arms, one after the other:

- cache off (``llm_cache=off``): every rerank=on query sends its request;
- cache on (a fresh score cache in a temporary file): a first pass over the questions
  fills it (timed: every request a miss), then the measured pass hits it, so no
  request is sent: the cached overhead.

Figures: p50/p95 of each side, the paired overhead (on - off per question) at p50 in
ms and the median per-question ratio on/off, and the p50 of ``phases_s["rerank"]`` (the
stage's own time as the query reports it). Needs the index built by ingest_2wiki.py.

    .venv/bin/python benchmarks/rerank_overhead.py [--queries N] [--top-n 20]
        [--methods naive,extractive] [--server-in-thread] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, WIKI_CORPUS, local_client, read_json, write_result
from query_latency import wiki_questions

from hopindex.api.client.local import LocalClient
from hopindex.core.settings import CacheMode, Settings
from hopindex.evaluation.metrics import percentile
from hopindex.methods.base import QueryOptions
from hopindex.testing.llm_limits import LlmServerConfig
from hopindex.testing.llm_server import LlmTestServer

INDEX = "twowiki"
K = 10
WARM_UP = 10


@contextmanager
def rerank_server(in_thread: bool) -> Iterator[str]:
    """The test server, in its own process (as a rerank service is) or in a thread of
    this one (sharing its GIL with the query); yields its root URL."""
    if in_thread:
        server = LlmTestServer(LlmServerConfig()).start_in_thread()
        try:
            yield server.root_url
        finally:
            server.stop()
        return
    process = subprocess.Popen([sys.executable, "-m", "hopindex.testing.llm_server", "--port",
                                "0", "--log-level", "WARNING"], stdout=subprocess.PIPE,
                               text=True)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip().removesuffix("/v1")
    finally:
        process.terminate()
        process.wait(timeout=30)


def rerank_requests(root_url: str) -> int:
    """The rerank requests the server has answered (its ``/_stats``)."""
    with urllib.request.urlopen(f"{root_url}/_stats", timeout=10) as response:
        stats = json.load(response)
    return sum(stats["requests"].get("rerank", {}).values())


def options(rerank: str) -> QueryOptions:
    return QueryOptions(k=K, params={"rerank": rerank})


def timed(client: LocalClient, question: str, method: str, rerank: str
          ) -> tuple[float, float | None, int]:
    """Wall ms, the result's rerank phase in ms (None when not reranked), passes."""
    t0 = time.perf_counter()
    result = client.query(INDEX, question, method=method, k=K, options=options(rerank))
    wall_ms = (time.perf_counter() - t0) * 1000
    if result.degraded:
        sys.exit(f"{method} {rerank} degraded: {[d.as_dict() for d in result.degraded]}")
    phase = result.usage.phases_s.get("rerank")
    passes = len(result.trace.get("rerank", {}).get("passes", []))
    if rerank == "on" and (phase is None or passes == 0):
        sys.exit(f"{method}: rerank=on but no rerank pass in the trace")
    if rerank == "off" and passes:
        sys.exit(f"{method}: rerank=off but the trace holds a rerank pass")
    return wall_ms, None if phase is None else phase * 1000, passes


def measure(client: LocalClient, questions: list[str], methods: list[str]
            ) -> dict[str, dict[str, list[float]]]:
    """Per method: on/off wall ms, paired on-off, on/off ratio, rerank phase ms."""
    series = ("on", "off", "delta", "ratio", "phase", "passes")
    runs: dict[str, dict[str, list[float]]] = {m: {s: [] for s in series} for m in methods}
    for i, q in enumerate(questions):
        for method in methods:
            got: dict[str, float] = {}
            for rerank in (("on", "off") if i % 2 else ("off", "on")):
                wall_ms, phase_ms, passes = timed(client, q, method, rerank)
                got[rerank] = wall_ms
                if phase_ms is not None:
                    runs[method]["phase"].append(phase_ms)
                    runs[method]["passes"].append(passes)
            runs[method]["on"].append(got["on"])
            runs[method]["off"].append(got["off"])
            runs[method]["delta"].append(got["on"] - got["off"])
            runs[method]["ratio"].append(got["on"] / got["off"])
    return runs


def summarise(runs: dict[str, list[float]]) -> dict[str, Any]:
    on, off = runs["on"], runs["off"]
    return {
        "on_p50_ms": round(percentile(on, 50), 2), "on_p95_ms": round(percentile(on, 95), 2),
        "off_p50_ms": round(percentile(off, 50), 2), "off_p95_ms": round(percentile(off, 95), 2),
        "overhead_p50_ms": round(statistics.median(runs["delta"]), 2),
        "overhead_ratio_median": round(statistics.median(runs["ratio"]), 3),
        "ratio_of_p50s": round(percentile(on, 50) / percentile(off, 50), 3),
        "rerank_phase_p50_ms": round(percentile(runs["phase"], 50), 2),
        "rerank_phase_p95_ms": round(percentile(runs["phase"], 95), 2),
        "passes_per_query": round(statistics.mean(runs["passes"]), 2),
    }


def settings_for(data_dir: Path, root_url: str, top_n: int, cache_url: str | None
                 ) -> Settings:
    return Settings(data_dir=data_dir, rerank_url=f"{root_url}/v1/rerank",
                    rerank_model="hopindex-test-rerank", rerank_top_n=top_n,
                    llm_cache=CacheMode.OFF if cache_url is None else CacheMode.ON,
                    llm_cache_url=cache_url or "").resolved()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--top-n", type=int, default=20, help="candidates the reranker reads")
    parser.add_argument("--methods", default="naive,extractive")
    parser.add_argument("--server-in-thread", action="store_true",
                        help="run the test server in this process (default: its own)")
    parser.add_argument("--data-dir", type=Path, default=OUT / "2wiki-data",
                        help="holds the index 'twowiki' (ingest_2wiki.py builds it)")
    args = parser.parse_args()
    methods = args.methods.split(",")
    corpus = read_json(WIKI_CORPUS)
    questions = wiki_questions(corpus, args.queries)
    data_dir = args.data_dir
    if not data_dir.exists():
        sys.exit(f"{data_dir} is missing: run benchmarks/ingest_2wiki.py first")

    arms: dict[str, Any] = {}
    with rerank_server(args.server_in_thread) as root_url:
        with local_client(settings=settings_for(data_dir, root_url, args.top_n, None)) as client:
            for q in questions[:WARM_UP]:  # model, searchers, connections
                for method in methods:
                    for rerank in ("on", "off"):
                        timed(client, q, method, rerank)
            before = rerank_requests(root_url)
            runs = measure(client, questions, methods)
            arms["cache_off"] = {m: summarise(r) for m, r in runs.items()}
            arms["cache_off"]["rerank_requests"] = rerank_requests(root_url) - before

        with tempfile.TemporaryDirectory() as tmp, local_client(settings=settings_for(
                data_dir, root_url, args.top_n, f"sqlite://{tmp}/rerank-cache.sqlite3")) as client:
            for q in questions[:WARM_UP]:
                for method in methods:
                    timed(client, q, method, "off")
            before = rerank_requests(root_url)
            fill: dict[str, list[float]] = {m: [] for m in methods}
            for q in questions:  # every rerank=on query a miss: fills the score cache
                for method in methods:
                    fill[method].append(timed(client, q, method, "on")[0])
            filled = rerank_requests(root_url) - before
            before = rerank_requests(root_url)
            runs = measure(client, questions, methods)
            arms["cache_on"] = {m: summarise(r) for m, r in runs.items()}
            arms["cache_on"]["rerank_requests"] = rerank_requests(root_url) - before
            arms["cache_on"]["fill_pass"] = {
                "rerank_requests": filled,
                **{m: {"on_p50_ms": round(percentile(v, 50), 2),
                       "on_p95_ms": round(percentile(v, 95), 2)} for m, v in fill.items()}}

    figures = {"queries": len(questions), "k": K, "top_n": args.top_n,
               "reranker": "LLM test server /v1/rerank (word overlap), loopback",
               "server": "in this process" if args.server_in_thread else "own process",
               "loadavg": Path("/proc/loadavg").read_text().split()[:3], **arms}
    for arm in ("cache_off", "cache_on"):
        print(f"{arm}: {arms[arm]['rerank_requests']} rerank requests in the measured pass")
        for method in methods:
            s = arms[arm][method]
            print(f"  {method:<11} on p50 {s['on_p50_ms']:>6.2f} p95 {s['on_p95_ms']:>6.2f} | "
                  f"off p50 {s['off_p50_ms']:>6.2f} p95 {s['off_p95_ms']:>6.2f} | "
                  f"overhead p50 {s['overhead_p50_ms']:+.2f} ms "
                  f"(x{s['overhead_ratio_median']:.3f}) | rerank phase p50 "
                  f"{s['rerank_phase_p50_ms']:.2f} ms")
    print(f"cache fill pass: {arms['cache_on']['fill_pass']}")
    print(f"wrote {write_result('rerank_overhead', figures)}")


if __name__ == "__main__":
    main()
