"""The ingestion multiplier: LLM tokens per corpus token, per method and phase, on 2Wiki.

Builds the first ``--limit`` passages of the bundled 2Wiki corpus (1,500 by default)
into a fresh index with each LLM index method (``indexrag``, ``compactrag``,
``sirerag``, ``kgbridge``), one data dir each, against the local test server
(``hopindex.testing.llm_server``, 0 ms latency, default response cache, embedded
backends, eager tasks), and prints each phase's prompt, completion and total tokens per
corpus token, read from the job record (``Job.corpus_tokens``, ``token_multiplier``).

What the figures are:
- the corpus tokens are the job's own count: the documents' title and text at 0.25
  tokens per character, the dry run's estimate (scheduler/dry_run_tokens.py). The
  test server's estimator (words x 4/3) of the same texts is printed beside it, with the
  multipliers it would give;
- prompt tokens are hopindex's real prompts, counted by the test server (words x 4/3,
  no tokenizer): a provider's tokenizer gives other counts of the same text;
- completion tokens are the test server's stand-in replies (a passage's sentences as
  its facts, propositions, QA pairs; its first sentence as a summary), not a model's:
  a real model writes more, or less, and its completions are the figure to re-measure.

    .venv/bin/python benchmarks/ingest_multiplier.py [--limit 1500]
        [--methods indexrag compactrag sirerag kgbridge]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, WIKI_CORPUS, local_client, read_json, write_result

from hopindex.core.models import Job
from hopindex.core.settings import Settings
from hopindex.core.token_multiplier import (
    multiplier_text,
    phase_multipliers,
    token_multiplier,
)
from hopindex.readers import RawDocument, ReadResult
from hopindex.testing.llm_limits import Endpoint, LlmServerConfig
from hopindex.testing.llm_responses import estimate_tokens
from hopindex.testing.llm_server import LlmTestServer

METHODS = ("indexrag", "compactrag", "sirerag", "kgbridge")
DATA_DIR = OUT / "ingest-multiplier-data"
# Published peer figures, for the table's last rows: Cognee's measured range of LLM
# tokens per corpus token at ingest, and one LightRAG ingest's input tokens.
PEERS = (("Cognee (published)", "5.7x-12x corpus tokens at ingest"),
         ("LightRAG (one 2,412-token document, reported)", "about 10x in input tokens"))


def passages(limit: int) -> list[RawDocument]:
    corpus = read_json(WIKI_CORPUS)[:limit]
    return [RawDocument(doc_id=None, title=r["title"], text=r["text"], metadata={},
                        origin=f"2wiki-corpus.json[{n}]") for n, r in enumerate(corpus)]


def build(method: str, records: list[RawDocument], server: LlmTestServer) -> dict[str, Any]:
    """One fresh index of ``method``: the job record's figures and the server's."""
    data_dir = DATA_DIR / method
    shutil.rmtree(data_dir, ignore_errors=True)
    settings = Settings(data_dir=data_dir, llm_model=server.config.model,
                        llm_base_url=server.base_url, llm_api_key="bench").resolved()
    before = server.stats
    with local_client(settings=settings) as client:
        # The model loads before the clock: the wall time is the build's own.
        client.service.backends.embedder.embed_texts(["Warm up the model."])
        started = time.perf_counter()
        job = client.ingest_read(f"mult-{method}", ReadResult(documents=records),
                                 method=method)
        wall_s = time.perf_counter() - started
    after = server.stats
    return {"job": job, "wall_s": round(wall_s, 1),
            "server_calls": after.count(Endpoint.CHAT) - before.count(Endpoint.CHAT),
            "server_prompt_tokens": after.prompt_tokens - before.prompt_tokens,
            "server_completion_tokens": after.completion_tokens - before.completion_tokens}


def figures_of(method: str, built: dict[str, Any], words_tokens: int) -> dict[str, Any]:
    job: Job = built["job"]
    corpus = job.corpus_tokens
    phases = phase_multipliers(job.llm, corpus)
    overall = token_multiplier(job.llm_total, corpus)
    by_words = token_multiplier(job.llm_total, words_tokens)
    return {
        "method": method, "state": job.state.value, "errors": len(job.errors),
        "documents": job.count("validate").done, "corpus_tokens": corpus,
        "corpus_tokens_words_x4_3": words_tokens, "wall_s": built["wall_s"],
        "server": {k: v for k, v in built.items() if k.startswith("server_")},
        "phases": {name: {"calls": job.llm[name].calls,
                          "cache_hits": job.llm[name].cache_hits,
                          "prompt_tokens": job.llm[name].prompt_tokens,
                          "completion_tokens": job.llm[name].completion_tokens,
                          "multiplier": m.as_dict()} for name, m in phases.items()},
        "total": {"calls": job.llm_total.calls, "prompt_tokens": job.llm_total.prompt_tokens,
                  "completion_tokens": job.llm_total.completion_tokens,
                  "multiplier": overall.as_dict() if overall else None,
                  "multiplier_over_words_x4_3": by_words.as_dict() if by_words else None},
    }


def _cells(multiplier: dict[str, float] | None) -> list[str]:
    if multiplier is None:
        return ["-"] * 3
    return [multiplier_text(multiplier[k]) for k in ("prompt", "completion", "total")]


def table(results: list[dict[str, Any]]) -> str:
    """The Markdown table for BENCHMARKS.md: each method's phases, then its total."""
    lines = ["| method | phase | LLM calls | prompt tok | compl tok | prompt / corpus "
             "| compl / corpus | total / corpus |",
             "|:---|:---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        for name, p in r["phases"].items():
            lines.append(f"| {r['method']} | {name} | {p['calls']:,} | {p['prompt_tokens']:,} "
                         f"| {p['completion_tokens']:,} | " + " | ".join(_cells(p["multiplier"]))
                         + " |")
        t = r["total"]
        lines.append(f"| **{r['method']}** | **all phases** | {t['calls']:,} | "
                     f"{t['prompt_tokens']:,} | {t['completion_tokens']:,} | "
                     + " | ".join(f"**{c}**" for c in _cells(t["multiplier"])) + " |")
    for peer, figure in PEERS:
        lines.append(f"| {peer} | | | | | | | {figure} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=1500, help="the first N 2Wiki passages")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    args = parser.parse_args()
    records = passages(args.limit)
    words_tokens = sum(estimate_tokens(f"{r.title} {r.text}") for r in records)
    load = {"start": os.getloadavg()[0]}
    results: list[dict[str, Any]] = []
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    try:
        for method in args.methods:
            built = build(method, records, server)
            result = figures_of(method, built, words_tokens)
            results.append(result)
            load[f"after_{method}"] = os.getloadavg()[0]
            total = result["total"]
            print(f"{method}: {result['state']}, {result['documents']} documents, "
                  f"{result['errors']} errors, {result['wall_s']} s; corpus "
                  f"{result['corpus_tokens']:,} tokens (words x 4/3: {words_tokens:,}); "
                  f"{total['calls']:,} calls (server {result['server']['server_calls']:,}), "
                  f"multiplier {total['multiplier']}, over words x 4/3 "
                  f"{total['multiplier_over_words_x4_3']}", flush=True)
    finally:
        server.stop()
    print()
    print(f"first {len(records):,} 2Wiki passages; prompt tokens: hopindex's prompts counted "
          "by the test server (words x 4/3); completion tokens: the test server's stand-in "
          "replies, not a model's; corpus tokens: 0.25 per character (the dry run's "
          "estimate)")
    print(table(results))
    path = write_result("ingest_multiplier", {
        "passages": len(records), "methods": results, "load_average_1m": load,
        "corpus_tokens_words_x4_3": words_tokens,
        "note": "completion tokens are the LLM test server's stand-in replies"})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
