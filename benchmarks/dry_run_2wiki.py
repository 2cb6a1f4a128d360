"""How long an ingest dry run of the 6,119-document 2Wiki corpus takes, against the
extractive ingest of the same corpus, in one run.

Three dry runs, each of the corpus file as ``hopindex ingest --dry-run`` reads it,
into new indexes: an ``extractive`` one (validation and content hashes; no phase
calls an LLM), an ``indexrag`` one before any response cache exists (every stage-1
request built and its cache key hashed), and an ``indexrag`` one once the cache file
exists (each key also looked up in it). The LLM settings point at the local test
server so an ``indexrag`` plan can be made; the dry runs must send it nothing. Each
dry run is timed three times (the median is reported); then the real extractive
ingest of the same file is timed, and each dry run's median is given as a share of
it (target: at most 10 %).

    .venv/bin/python benchmarks/dry_run_2wiki.py
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, dataset_files, local_client, write_result

from hopindex.api.client import IngestPlanView
from hopindex.api.client.local import LocalClient
from hopindex.core.settings import Settings
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer

ROUNDS = 3
TARGET_SHARE = 0.10


def timed_plans(client: LocalClient, corpus: Path, index: str, method: str
                ) -> tuple[IngestPlanView, list[float]]:
    """``ROUNDS`` dry runs of ``corpus`` into ``index``; the last plan and each time."""
    times: list[float] = []
    plan: IngestPlanView | None = None
    for _ in range(ROUNDS):
        started = time.perf_counter()
        plan = client.plan_ingest(index, [corpus], method=method)
        times.append(time.perf_counter() - started)
    assert plan is not None
    return plan, times


def summary(plan: IngestPlanView, times: list[float], ingest_s: float) -> dict[str, Any]:
    median = statistics.median(times)
    return {"documents": dict(plan.documents),
            "phases": {p["phase"]: {"planning": p["planning"], "calls": p["calls"],
                                    "cache_hits": p["cache_hits"]} for p in plan.phases},
            "times_s": [round(t, 3) for t in times], "median_s": round(median, 3),
            "share_of_ingest": round(median / ingest_s, 5)}


def main() -> None:
    corpus, _ = dataset_files("2wiki")
    data_dir = OUT / "dry-run-2wiki-data"
    shutil.rmtree(data_dir, ignore_errors=True)
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    try:
        settings = Settings(data_dir=data_dir, llm_model=server.config.model,
                            llm_base_url=server.base_url, llm_api_key="bench").resolved()
        with local_client(settings=settings) as client:
            # The ingest's models load before its clock starts, as in ingest_2wiki.py.
            client.service.backends.nlp.analyze_texts(["Warm up the pipeline."])
            client.service.backends.embedder.embed_texts(["Warm up the model."])
            sent = server.stats.count(Endpoint.CHAT)
            extractive, extractive_s = timed_plans(client, corpus, "wiki", "extractive")
            cold, cold_s = timed_plans(client, corpus, "wiki-indexrag", "indexrag")
            dry_requests = server.stats.count(Endpoint.CHAT) - sent
            # One indexrag document ingested creates the response cache; the next dry
            # runs look every planned key up in it.
            client.ingest("seed", [{"title": "Seed", "text": "Seed is a word."}],
                          method="indexrag")
            sent = server.stats.count(Endpoint.CHAT)
            warm, warm_s = timed_plans(client, corpus, "wiki-indexrag", "indexrag")
            dry_requests += server.stats.count(Endpoint.CHAT) - sent
            started = time.perf_counter()
            job = client.ingest("wiki", [corpus], method="extractive")
            ingest_s = time.perf_counter() - started
    finally:
        server.stop()
    figures = {
        "corpus": "2wiki",
        # Valid documents, whether or not they need work.
        "documents": sum(extractive.documents[k] for k in ("new", "changed", "unchanged")),
        "extractive_ingest_s": round(ingest_s, 2), "ingest_state": job.state.value,
        "requests_during_dry_runs": dry_requests,
        "extractive": summary(extractive, extractive_s, ingest_s),
        "indexrag_no_cache": summary(cold, cold_s, ingest_s),
        "indexrag_with_cache": summary(warm, warm_s, ingest_s),
        "target_share": TARGET_SHARE,
    }
    path = write_result("dry-run-2wiki", figures)
    print(f"extractive ingest of {figures['documents']} documents: {ingest_s:.1f}s "
          f"({job.state.value}); LLM requests during the dry runs: {dry_requests}")
    for name in ("extractive", "indexrag_no_cache", "indexrag_with_cache"):
        run = figures[name]
        calls = {phase: p["calls"] for phase, p in run["phases"].items()}
        print(f"dry run {name}: median {run['median_s']:.3f}s of {run['times_s']} = "
              f"{run['share_of_ingest']:.2%} of the ingest (target <= "
              f"{TARGET_SHARE:.0%}); calls {calls}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
