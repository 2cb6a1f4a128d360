"""BridgeRAG: the pipeline's own time per query next to its LLM time; R@5 per condition.

Part 1 (``hopindex eval``): HotpotQA-100 (the bundled sample, an extractive index,
all-MiniLM-L6-v2) with ``--method naive --method bridgerag``, i.e. conditions A,
B, C, the merged SVO+entities call and the two-bridge judge. The LLM is the local
test server: its scripted replies check the mechanics (calls, pool, fusion), not
the method's quality.

Part 2 (overhead): bridgerag queries on the foundation's 2Wiki index (built by
``ingest_2wiki.py``; built here when missing, ~5 min) and on HotpotQA-100.
Overhead = query latency minus the time inside LLM calls (the ``rewrite`` and
``judge`` phases: client, HTTP round trip, the server's reply): hop-1 and hop-2 embeddings, the six
ANN passes, unit loads, direct cosines, PIT fusion, provenance expansion. The
test server runs in its own process at 0 ms latency. Target: p50 <= 60 ms on 2Wiki.

    .venv/bin/python benchmarks/bridgerag_overhead.py [--queries N] [--skip-eval]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, ROOT, WIKI_CORPUS, local_client, read_json, write_result
from query_latency import wiki_questions

from hopindex.api.client.local import LocalClient
from hopindex.core.settings import CacheMode, Settings
from hopindex.evaluation.metrics import percentile
from hopindex.methods.base import QueryOptions
from hopindex.methods.phases import QueryPhase
from hopindex.readers import RawDocument, ReadResult

TWOWIKI = "twowiki"
HOTPOT = "hotpot"
SAMPLE = ROOT / "hopindex" / "sample" / "hotpotqa-100"
MODEL = "hopindex-test-llm"
# The phases spent inside LLM calls: the SVO and entity calls, and the judge.
LLM_PHASES = frozenset({QueryPhase.REWRITE.value, QueryPhase.JUDGE.value})
CLI = [sys.executable, "-c", "from hopindex.api.cli import main; main()"]


@contextmanager
def llm_server() -> Iterator[str]:
    """The test server in its own process; yields its base URL."""
    process = subprocess.Popen([sys.executable, "-m", "hopindex.testing.llm_server", "--port",
                                "0", "--log-level", "WARNING"], stdout=subprocess.PIPE,
                               text=True)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait(timeout=30)


def llm_env(base_url: str, data_dir: Path) -> dict[str, str]:
    return {**os.environ, "HOPINDEX_DATA_DIR": str(data_dir), "HOPINDEX_LLM_MODEL": MODEL,
            "HOPINDEX_LLM_BASE_URL": base_url, "HOPINDEX_LLM_API_KEY": "bench",
            "HOPINDEX_LLM_CACHE": "off", "HOPINDEX_LOG_LEVEL": "ERROR"}


def llm_settings(data_dir: Path, base_url: str) -> Settings:
    return Settings(data_dir=data_dir, llm_model=MODEL, llm_base_url=base_url,
                    llm_api_key="bench", llm_cache=CacheMode.OFF).resolved()


def run_eval(base_url: str) -> dict[str, Any]:
    """hopindex eval --method naive --method bridgerag over an extractive HotpotQA-100."""
    data_dir = OUT / "bridgerag-hotpot-data"
    env = llm_env(base_url, data_dir)
    if not (data_dir / "state.sqlite3").exists():
        # With an LLM configured a new index would be IndexRAG: ask for passages.
        subprocess.run([*CLI, "ingest", "--index", HOTPOT, "--method", "extractive", "--quiet",
                        str(SAMPLE / "corpus.json")], env=env, check=True)
    report_path = OUT / "eval-bridgerag-hotpotqa-100.json"
    started = time.perf_counter()
    subprocess.run([*CLI, "eval", "--index", HOTPOT, "--dataset", str(SAMPLE / "questions.json"),
                    "--method", "naive", "--method", "bridgerag", "--json", str(report_path)],
                   env=env, check=True)
    report: dict[str, Any] = json.loads(report_path.read_text())
    return {"eval_s": time.perf_counter() - started, "report": str(report_path),
            "methods": {m["method"]: {"R@2": m["recall"]["2"], "R@5": m["recall"]["5"],
                                      "R@10": m["recall"]["10"],
                                      "llm_calls_mean": m["llm"]["calls_mean"],
                                      "p50_ms": m["latency_p50_ms"]}
                        for m in report["methods"]}}


def ensure_2wiki(settings: Settings) -> None:
    with local_client(settings=settings) as client:
        if client.service.backends.state.get_index(TWOWIKI) is not None:
            return
        corpus = read_json(WIKI_CORPUS)
        print(f"building the 2Wiki index ({len(corpus)} passages; ingest_2wiki.py builds the "
              "same) ...", flush=True)
        records = [RawDocument(doc_id=None, title=r["title"], text=r["text"], metadata={},
                               origin=f"corpus.json[{i}]") for i, r in enumerate(corpus)]
        started = time.perf_counter()
        client.ingest_read(TWOWIKI, ReadResult(documents=records), method="extractive")
        print(f"built in {time.perf_counter() - started:.0f}s", flush=True)


def measure(client: LocalClient, index: str, questions: list[str],
            params: dict[str, str]) -> dict[str, Any]:
    options = QueryOptions(k=5, params=params)
    for q in questions[:10]:  # warm the model, the searchers and the connection pool
        client.query(index, q, method="bridgerag", k=options.k, options=options)
    total_ms: list[float] = []
    llm_ms: list[float] = []
    overhead_ms: list[float] = []
    phases: dict[str, list[float]] = {}
    calls: list[int] = []
    searches: list[int] = []
    for q in questions:
        started = time.perf_counter()
        result = client.query(index, q, method="bridgerag", k=options.k, options=options)
        total = (time.perf_counter() - started) * 1000
        llm = sum(s for name, s in result.usage.phases_s.items() if name in LLM_PHASES)
        total_ms.append(total)
        llm_ms.append(llm * 1000)
        overhead_ms.append(total - llm * 1000)
        for name, seconds in result.usage.phases_s.items():
            if name not in LLM_PHASES:
                phases.setdefault(name, []).append(seconds * 1000)
        calls.append(result.usage.llm_calls)
        searches.append(result.trace["vector_searches"])
    return {
        "queries": len(questions),
        "overhead_p50_ms": percentile(overhead_ms, 50),
        "overhead_p95_ms": percentile(overhead_ms, 95),
        "llm_p50_ms": percentile(llm_ms, 50), "llm_p95_ms": percentile(llm_ms, 95),
        "total_p50_ms": percentile(total_ms, 50), "total_p95_ms": percentile(total_ms, 95),
        "phases_p50_ms": {name: round(percentile(v, 50), 3) for name, v in phases.items()},
        "llm_calls_mean": sum(calls) / len(calls),
        "vector_searches_mean": sum(searches) / len(searches),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--skip-eval", action="store_true")
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    with llm_server() as base_url:
        if not args.skip_eval:
            figures["eval_hotpotqa_100"] = run_eval(base_url)
            for name, row in figures["eval_hotpotqa_100"]["methods"].items():
                print(f"eval {name:<20} R@5 {row['R@5']:.3f}  R@10 {row['R@10']:.3f}  "
                      f"LLM calls {row['llm_calls_mean']:.1f}")
        wiki = llm_settings(OUT / "2wiki-data", base_url)
        ensure_2wiki(wiki)
        corpus = read_json(WIKI_CORPUS)
        questions_2wiki = wiki_questions(corpus, args.queries)
        with local_client(settings=wiki) as client:
            for label, params in (("2wiki", {}), ("2wiki_merged", {"extraction": "merged"})):
                figures[label] = measure(client, TWOWIKI, questions_2wiki, params)
        hotpot = llm_settings(OUT / "bridgerag-hotpot-data", base_url)
        if (hotpot.data_dir / "state.sqlite3").exists():
            questions = [q["question"] for q in json.loads((SAMPLE / "questions.json").read_text())]
            with local_client(settings=hotpot) as client:
                figures["hotpotqa_100"] = measure(client, HOTPOT, questions, {})
    for label in ("2wiki", "2wiki_merged", "hotpotqa_100"):
        if label in figures:
            f = figures[label]
            print(f"{label}: overhead p50 {f['overhead_p50_ms']:.1f} ms (p95 "
                  f"{f['overhead_p95_ms']:.1f}; target p50 <= 60 ms), LLM p50 "
                  f"{f['llm_p50_ms']:.1f} ms, total p50 {f['total_p50_ms']:.1f} ms; "
                  f"{f['llm_calls_mean']:.2f} calls, {f['vector_searches_mean']:.2f} searches")
            print(f"  phases p50 (ms): {f['phases_p50_ms']}")
    print(f"wrote {write_result('bridgerag_overhead', figures)}")


if __name__ == "__main__":
    main()
