"""CompactRAG end to end against the local test server: build, two calls per query, and
where its cumulative tokens (build + queries) cross the baselines'.

One eager build (no broker, embedded backends, the default embedder) of a
``compactrag`` index from scratch: wall time, QA calls against chunks (one each), QA
units, pairs dropped per rule, build tokens, peak RSS. Then the ``compactrag`` query
method over the questions with the model-free modules and again with tiny local
models (random weights: mechanics and cost only): LLM calls per query counted by the
server and by the query's usage (exactly 2 each), tokens per query, Recall@k, and the
p50 without the two LLM calls (each query's wall time minus its ``rewrite`` and
``answer`` phases) against its 40 ms target, with the median of every phase. Unless
``--no-baselines``: an ``indexrag`` index and an ``extractive`` one over the same
corpus, ``indexrag`` over the first, ``naive`` and ``ircot`` over the second, the
cumulative tokens (build + N queries) and the break-even N; then ``hopindex eval
--curve`` over the three indexes draws the curve.

The test model's replies are deterministic stand-ins (``hopindex/testing/llm_compactrag.py``):
recall measures the pipeline, not a model. The LLM response cache is off, so every
call reaches the server and is counted there.

    .venv/bin/python benchmarks/compactrag_pipeline.py [--corpus 2wiki|hotpot] [--limit 100]
        [--no-baselines] [--torch-threads N] [--reuse-index]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, ROOT, dataset_files, high_water_mb, local_client, write_result
from query_log import QueryLog

sys.path.insert(0, str(ROOT))  # the tiny local models are the tests' own

from hopindex.api.client.local import LocalClient
from hopindex.core.models import Job
from hopindex.core.settings import CacheMode, Settings
from hopindex.evaluation.datasets import Question, load_questions
from hopindex.evaluation.metrics import percentile
from hopindex.evaluation.report import MethodReport
from hopindex.evaluation.runner import evaluate_method
from hopindex.evaluation.token_curve import TokenCurve, break_even
from hopindex.methods.base import QueryOptions, QueryResult
from hopindex.methods.chunking import chunk_document
from hopindex.methods.compactrag.method import RECORDS
from hopindex.methods.compactrag.modules import EXTRACTOR_VARIABLE, REWRITER_VARIABLE
from hopindex.methods.phases import QueryPhase
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.methods.compactrag.tiny_models import save_tiny_extractor, save_tiny_rewriter

CALLS_PER_QUERY = 2
LOCAL_P50_TARGET_MS = 40.0
LLM_PHASES = (QueryPhase.REWRITE.value, QueryPhase.ANSWER.value)
# Index method → the query methods compared over it.
BASELINES = {"indexrag": ("indexrag",), "extractive": ("naive", "ircot")}
SHOWN_PHASES = ("rewrite", "answer", "extract", "embed", "dense_search", "load_units", "expand")


def _trace_fields(result: QueryResult) -> dict[str, Any]:
    return {"sub_questions": len(result.trace.get("sub_questions", []))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=("2wiki", "hotpot"), default="2wiki")
    parser.add_argument("--limit", type=int, default=100, help="questions to evaluate")
    parser.add_argument("--no-baselines", action="store_true",
                        help="skip the indexrag and extractive builds and the curve")
    parser.add_argument("--reuse-index", action="store_true",
                        help="query the compactrag index an earlier run of this corpus "
                             "built, without building (no build figures)")
    parser.add_argument("--torch-threads", type=int, default=0,
                        help="torch intra-op threads in this process (the query embedder, "
                             "the local models); 0 leaves torch's default")
    args = parser.parse_args()
    if args.reuse_index and not args.no_baselines:
        parser.error("--reuse-index needs --no-baselines: the cumulative tokens need the "
                     "build's")
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    corpus_path, questions_path = dataset_files(args.corpus)
    questions = load_questions(questions_path)[: args.limit]
    base = f"cr-{args.corpus}"
    index = f"{base}-compactrag"
    data_dir = OUT / f"compactrag-{args.corpus}-data"
    load = {"start": os.getloadavg()[0]}
    figures: dict[str, Any] = {"corpus": args.corpus, "questions": len(questions),
                               "torch_threads": args.torch_threads}
    server = LlmTestServer(LlmServerConfig(latency_s=0)).start_in_thread()
    try:
        with _client(data_dir, server, {}, wipe=not args.reuse_index) as client:
            if not args.reuse_index:
                job, wall_s, calls = _build(client, server, index, corpus_path, "compactrag")
                figures["build"] = _build_figures(client, index, job, wall_s, calls)
            elif index not in {i.name for i in client.indexes.list_indexes()}:
                sys.exit(f"--reuse-index: no index {index!r} under {data_dir}; run once "
                         "without it")
            load["after_build"] = os.getloadavg()[0]
            figures["queries_model_free"] = _queries(client, server, index, questions)
        models = _tiny_models()
        method_env = {EXTRACTOR_VARIABLE: str(models / "extractor"),
                      REWRITER_VARIABLE: str(models / "rewriter")}
        with _client(data_dir, server, method_env, wipe=False) as client:
            figures["queries_tiny_models"] = _queries(client, server, index, questions)
        load["after_queries"] = os.getloadavg()[0]
        if not args.no_baselines:
            with _client(data_dir, server, {}, wipe=False) as client:
                figures["baselines"] = _baselines(client, server, base, corpus_path,
                                                  questions)
            figures["cumulative_tokens"] = _cumulative(figures)
            figures["curve"] = _curve(data_dir, server, base, corpus_path, questions_path,
                                      args.corpus, len(questions))
        load["end"] = os.getloadavg()[0]
        figures.update(load_average_1m=load, peak_rss_mb=round(high_water_mb()),
                       server=server.stats.as_dict())
    finally:
        server.stop()
    threads = f"-threads{args.torch_threads}" if args.torch_threads else ""
    path = write_result(f"compactrag-pipeline-{args.corpus}{threads}", figures)
    print(f"wrote {path}")


def _settings(data_dir: Path, server: LlmTestServer, method_env: dict[str, str]) -> Settings:
    return Settings(data_dir=data_dir, llm_model=server.config.model,
                    llm_base_url=server.base_url, llm_api_key="bench", llm_cache=CacheMode.OFF,
                    method_env=method_env).resolved()


@contextmanager
def _client(data_dir: Path, server: LlmTestServer, method_env: dict[str, str], *,
            wipe: bool) -> Iterator[LocalClient]:
    if wipe:
        shutil.rmtree(data_dir, ignore_errors=True)
    with local_client(settings=_settings(data_dir, server, method_env)) as client:
        # The models load before any clock: the build's wall time is the build's own.
        client.service.backends.nlp.analyze_texts(["Warm up the pipeline."])
        client.service.backends.embedder.embed_texts(["Warm up the model."])
        yield client


def _build(client: LocalClient, server: LlmTestServer, index: str, corpus_path: Path,
           method: str) -> tuple[Job, float, dict[str, int]]:
    before = dict(server.stats.by_kind)
    started = time.perf_counter()
    job = client.ingest(index, [corpus_path], method=method)
    wall_s = time.perf_counter() - started
    calls = {k: v - before.get(k, 0) for k, v in server.stats.by_kind.items()
             if v - before.get(k, 0)}
    print(f"{method} build: {wall_s:.1f}s, {job.state.value}, {len(job.errors)} errors, "
          f"server calls {calls}", flush=True)
    return job, wall_s, calls


def _tokens(job: Job) -> dict[str, int]:
    llm = job.as_dict()["llm"]
    return {"prompt_tokens": llm["prompt_tokens"], "completion_tokens": llm["completion_tokens"],
            "total": llm["prompt_tokens"] + llm["completion_tokens"], "calls": llm["calls"]}


def _build_figures(client: LocalClient, index: str, job: Job, wall_s: float,
                   calls: dict[str, int]) -> dict[str, Any]:
    state = client.service.backends.state
    doc_ids = sorted(state.document_hashes(index))
    documents = state.get_documents(index, doc_ids)
    chunks = sum(len(chunk_document(d)) for d in documents)
    dropped: dict[str, int] = {}
    for record in state.get_records(index, RECORDS, doc_ids).values():
        for reason, count in record.get("dropped", {}).items():
            dropped[reason] = dropped.get(reason, 0) + count
    units = {k.value: v for k, v in state.count_units(index).items()}
    figures = {
        "documents": len(documents), "chunks": chunks, "state": job.state.value,
        "errors": len(job.errors), "wall_s": round(wall_s, 1),
        "qa_calls": calls.get("qa_pairs", 0), "calls_by_kind": calls, "units": units,
        "dropped": dropped, "tokens": _tokens(job), "llm": job.as_dict()["llm"],
        "peak_rss_mb": round(high_water_mb())}
    print(f"build: {len(documents)} documents, {chunks} chunks, QA calls "
          f"{figures['qa_calls']} (must equal chunks: "
          f"{'yes' if figures['qa_calls'] == chunks else 'NO'}), units {units}, dropped "
          f"{dropped}, tokens {figures['tokens']}, peak RSS {figures['peak_rss_mb']} MB",
          flush=True)
    return figures


def _evaluate(client: LocalClient, server: LlmTestServer, index: str,
              questions: list[Question], method: str
              ) -> tuple[MethodReport, list[dict[str, Any]]]:
    # One query first, not counted: lazy loads (engines, local models) stay out of p50.
    client.query(index, questions[0].question, method=method, k=QueryOptions().k)
    # The evaluation code `hopindex eval` runs, over the client's service.
    log = QueryLog(server, describe=_trace_fields)
    with log.installed(client):
        report, _ = evaluate_method(client.service, index, questions, method)
    return report, log.rows


def _queries(client: LocalClient, server: LlmTestServer, index: str,
             questions: list[Question]) -> dict[str, Any]:
    report, rows = _evaluate(client, server, index, questions, "compactrag")
    assert report.llm is not None
    server_calls = [sum(r["by_kind"].values()) for r in rows]
    kinds_ok = all(r["by_kind"] == {"decompose": 1, "synthesize": 1} for r in rows)
    local_ms = [(r["wall_s"] - sum(r["phases"].get(p, 0.0) for p in LLM_PHASES)) * 1000
                for r in rows]
    medians = {p: percentile([r["phases"].get(p, 0.0) * 1000 for r in rows], 50)
               for p in SHOWN_PHASES}
    medians["other"] = percentile([(r["wall_s"] - sum(r["phases"].values())) * 1000
                                   for r in rows], 50)
    tokens = [float(r["tokens"]) for r in rows]
    figures = {
        "recall": report.recall, "latency_p50_ms": percentile([r["wall_s"] * 1000
                                                               for r in rows], 50),
        "latency_p95_ms": percentile([r["wall_s"] * 1000 for r in rows], 95),
        "p50_without_llm_ms": percentile(local_ms, 50),
        "p95_without_llm_ms": percentile(local_ms, 95),
        "target_ms": LOCAL_P50_TARGET_MS, "phase_p50_ms": medians,
        "server_calls_per_query": {"min": min(server_calls), "max": max(server_calls)},
        "server_kinds_exact": kinds_ok,
        "usage_calls_per_query": {"min": min(r["llm_calls"] for r in rows),
                                  "max": max(r["llm_calls"] for r in rows)},
        "tokens_mean": sum(tokens) / len(tokens), "tokens_p95": percentile(tokens, 95),
        "prompt_tokens_mean": report.llm.prompt_tokens_mean,
        "completion_tokens_mean": report.llm.completion_tokens_mean,
        "sub_questions_mean": sum(r["sub_questions"] for r in rows) / len(rows)}
    exact = (figures["server_calls_per_query"] == figures["usage_calls_per_query"]
             == {"min": CALLS_PER_QUERY, "max": CALLS_PER_QUERY} and kinds_ok)
    figures["exactly_two_calls"] = exact
    recall = "/".join(f"{report.recall[k]:.3f}" for k in (1, 2, 5, 10, 20))
    print(f"compactrag: R@1/2/5/10/20 {recall}; calls/query server "
          f"{figures['server_calls_per_query']} usage {figures['usage_calls_per_query']} "
          f"(exactly 2 each: {'yes' if exact else 'NO'}); tokens/query mean "
          f"{figures['tokens_mean']:.0f} p95 {figures['tokens_p95']:.0f}; p50 "
          f"{figures['latency_p50_ms']:.1f} ms, without the two calls "
          f"{figures['p50_without_llm_ms']:.1f} ms (target <= {LOCAL_P50_TARGET_MS:.0f} ms); "
          f"phase p50s {({k: round(v, 1) for k, v in medians.items()})}; sub-questions "
          f"{figures['sub_questions_mean']:.2f}", flush=True)
    return figures


def _tiny_models() -> Path:
    folder = OUT / "compactrag-tiny-models"
    shutil.rmtree(folder, ignore_errors=True)
    save_tiny_extractor(folder / "extractor")
    save_tiny_rewriter(folder / "rewriter")
    return folder


def _baselines(client: LocalClient, server: LlmTestServer, base: str, corpus_path: Path,
               questions: list[Question]) -> dict[str, Any]:
    """``indexrag`` (one call per query) over its index; ``naive`` (none) and ``ircot``
    (iterative retrieval and reasoning, several calls) over an ``extractive`` one."""
    figures: dict[str, Any] = {}
    for index_method, methods in BASELINES.items():
        index = f"{base}-{index_method}"
        job, wall_s, calls = _build(client, server, index, corpus_path, index_method)
        for method in methods:
            figures[method] = _baseline(client, server, index, index_method, method,
                                        questions, job, wall_s, calls)
    return figures


def _baseline(client: LocalClient, server: LlmTestServer, index: str, index_method: str,
              method: str, questions: list[Question], job: Job, wall_s: float,
              calls: dict[str, int]) -> dict[str, Any]:
    report, rows = _evaluate(client, server, index, questions, method)
    assert report.llm is not None
    figures = {
        "index_method": index_method, "build_wall_s": round(wall_s, 1),
        "build_state": job.state.value, "build_calls_by_kind": calls,
        "build_tokens": _tokens(job), "recall": report.recall,
        "latency_p50_ms": report.latency_p50_ms,
        "llm_calls_per_query": {"min": min(r["llm_calls"] for r in rows),
                                "max": max(r["llm_calls"] for r in rows),
                                "mean": report.llm.calls_mean},
        "tokens_mean": report.llm.tokens_mean, "tokens_p95": report.llm.tokens_p95}
    print(f"{method} over {index_method}: build {_tokens(job)['total']:,} tokens; R@5 "
          f"{report.recall[5]:.3f}; calls/query {figures['llm_calls_per_query']}; "
          f"tokens/query {report.llm.tokens_mean:.0f}; p50 {report.latency_p50_ms:.1f} ms",
          flush=True)
    return figures


def _cumulative(figures: dict[str, Any]) -> dict[str, Any]:
    """C(N) = build tokens + N x mean tokens per query, and where compactrag's line
    crosses each baseline's."""
    baselines = figures["baselines"]
    curves = {
        "compactrag": TokenCurve("compactrag", figures["build"]["tokens"]["total"],
                                 figures["queries_model_free"]["tokens_mean"]),
        **{m: TokenCurve(m, b["build_tokens"]["total"], b["tokens_mean"])
           for m, b in baselines.items()}}
    result: dict[str, Any] = {
        "curves": {m: {"build_tokens": c.build_tokens, "tokens_per_query": c.tokens_per_query,
                       **{f"at_{n}": c.at(n) for n in (100, 1_000, 10_000, 100_000)}}
                   for m, c in curves.items()},
        "break_even": {}}
    for m, c in curves.items():
        print(f"cumulative tokens {m}: {c.build_tokens:,.0f} + N x {c.tokens_per_query:,.0f}",
              flush=True)
    for other in baselines:
        point = break_even(curves["compactrag"], curves[other])
        result["break_even"][other] = (
            None if point is None else {"payer": point.payer, "against": point.against,
                                        "queries": point.queries, "at": point.at})
        print(f"compactrag vs {other}: " + (point.note if point else "the lines never cross "
                                            "for N > 0"), flush=True)
    return result


def _curve(data_dir: Path, server: LlmTestServer, base: str, corpus_path: Path,
           questions_path: Path, corpus: str, limit: int) -> dict[str, Any]:
    """``hopindex eval --curve`` over the three indexes built above (it reuses them and
    reads their build tokens from their jobs), in its own process."""
    png = OUT / f"compactrag-curve-{corpus}.png"
    report = OUT / f"compactrag-eval-{corpus}.json"
    command = [str(ROOT / ".venv" / "bin" / "hopindex"), "eval", "--index", base,
               "--dataset", str(questions_path), "--corpus", str(corpus_path),
               "--index-method", "compactrag", "--index-method", "indexrag",
               "--index-method", "extractive", "--method", "compactrag",
               "--method", "indexrag", "--method", "ircot", "--method", "naive",
               "--limit", str(limit),
               "--json", str(report), "--curve", str(png)]
    env = {**os.environ, "HOPINDEX_DATA_DIR": str(data_dir),
           "HOPINDEX_LLM_MODEL": server.config.model, "HOPINDEX_LLM_BASE_URL": server.base_url,
           "HOPINDEX_LLM_API_KEY": "bench", "HOPINDEX_LLM_CACHE": "off"}
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    print(done.stdout[-3000:], done.stderr[-2000:], sep="\n", flush=True)
    if done.returncode != 0:
        return {"command": " ".join(command[1:]), "returncode": done.returncode}
    curve = json.loads(report.read_text())["token_curve"]
    return {"png": str(png.relative_to(ROOT)), "report": str(report.relative_to(ROOT)),
            "wall_s": round(time.perf_counter() - started, 1), **curve}


if __name__ == "__main__":
    main()
