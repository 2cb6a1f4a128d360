"""IndexRAG in LLM mode on HotpotQA-100 against the local test server.

Measures what the pipeline costs and returns with a deterministic stand-in model:
calls and tokens per stage, ingest wall time, a second ingest's calls, and for the
``indexrag`` and ``ircot`` query methods Recall@k, LLM calls and tokens per query
and latency. The stand-in model's answers are extractive guesses, so EM/F1 here
measure plumbing, not a model; the recall and cost figures are the pipeline's own.

    .venv/bin/python benchmarks/indexrag_pipeline.py [--latency-ms 0] [--limit 100]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, ROOT, local_client, peak_rss_mb, write_result

from hopindex.core.models import Stage
from hopindex.core.settings import Settings
from hopindex.evaluation.datasets import load_questions
from hopindex.evaluation.runner import evaluate_method
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer

SAMPLE = ROOT / "hopindex" / "sample" / "hotpotqa-100"
INDEX = "hotpot-indexrag"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=0.0,
                        help="test server latency per request")
    parser.add_argument("--limit", type=int, default=100, help="questions to evaluate")
    args = parser.parse_args()
    data_dir = OUT / "indexrag-data"
    shutil.rmtree(data_dir, ignore_errors=True)
    server = LlmTestServer(LlmServerConfig(latency_s=args.latency_ms / 1000)).start_in_thread()
    try:
        settings = Settings(data_dir=data_dir, llm_model=server.config.model,
                            llm_base_url=server.base_url, llm_api_key="bench").resolved()
        with local_client(settings=settings) as client:
            started = time.perf_counter()
            job = client.ingest(INDEX, [SAMPLE / "corpus.json"])
            ingest_s = time.perf_counter() - started
            before = server.stats.count(Endpoint.CHAT)
            again = client.ingest(INDEX, [SAMPLE / "corpus.json"])
            second_calls = server.stats.count(Endpoint.CHAT) - before
            questions = load_questions(SAMPLE / "questions.json")[: args.limit]
            methods = {}
            for method in ("indexrag", "ircot"):
                # The evaluation code `hopindex eval` runs, over the client's service.
                report, _ = evaluate_method(client.service, INDEX, questions, method)
                assert report.llm is not None
                methods[method] = {
                    "recall": report.recall, "latency_p50_ms": report.latency_p50_ms,
                    "latency_p95_ms": report.latency_p95_ms,
                    "llm_calls_mean": report.llm.calls_mean, "llm_calls_p95": report.llm.calls_p95,
                    "prompt_tokens_mean": report.llm.prompt_tokens_mean,
                    "completion_tokens_mean": report.llm.completion_tokens_mean,
                }
            units = client.service.backends.state.count_units(INDEX)
        figures = {
            "documents": job.counts[Stage.VALIDATE].done,
            "ingest_s": round(ingest_s, 1), "state": job.state.value, "errors": len(job.errors),
            "llm": job.as_dict()["llm"], "units": {k.value: v for k, v in units.items()},
            "second_ingest_calls": second_calls, "second_ingest_state": again.state.value,
            "server": server.stats.as_dict(), "methods": methods,
            "latency_ms": args.latency_ms, "peak_rss_mb": round(peak_rss_mb()),
        }
    finally:
        server.stop()
    path = write_result("indexrag-pipeline", figures)
    print(f"ingest {figures['ingest_s']} s, stage calls "
          f"{ {s: u['calls'] for s, u in figures['llm']['stages'].items()} }, "
          f"second ingest {second_calls} calls")
    for method, m in methods.items():
        print(f"{method}: R@5 {m['recall'][5]:.3f} R@10 {m['recall'][10]:.3f} "
              f"calls/query {m['llm_calls_mean']:.2f} (p95 {m['llm_calls_p95']:.0f}) "
              f"prompt tokens/query {m['prompt_tokens_mean']:.0f} p50 {m['latency_p50_ms']:.1f} ms")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
