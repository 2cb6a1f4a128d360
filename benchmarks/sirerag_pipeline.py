"""SiReRAG end to end against the local test server: build, rebuild, queries, repeatability.

One eager build (no broker, embedded backends, the default embedder) of a ``sirerag``
index from scratch, with the time it spends in the clustering step
(``trees.cluster_nodes``, timed per tree and level in this process), in LLM calls and
in the embedder; its peak RSS (this process's high-water mark); its LLM calls against
what it should make (one proposition call per chunk, one summary call per planned
cluster) and its tokens per phase. Then a second identical ingest (its LLM calls), and
``sirerag``, ``sirerag:pool=similarity`` (RAPTOR's pool over the same index) and
``naive`` over the questions: Recall@k, latency, TPQ, LLM calls, pool sizes, TPER, and
``sirerag``'s p50 without its answer call against ``naive``'s, measured
question by question in turn (three rounds) so both meet the same load. With ``--corpus
hotpot``, a second build from scratch in another data dir must give the same trees.

The test model's replies are deterministic stand-ins (``hopindex/testing/llm_sirerag.py``):
the recall figures measure the pipeline, not a model.

    .venv/bin/python benchmarks/sirerag_pipeline.py [--corpus hotpot|2wiki] [--limit 100]
        [--latency-ms 0] [--profile FILE] [--reuse-index]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest.mock import patch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, dataset_files, high_water_mb, local_client, status_mb, write_result
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from hopindex.api.client.local import LocalClient
from hopindex.backends.embedder.sentence_transformer import SentenceTransformerEmbedder
from hopindex.backends.llm.runner import LlmRunner
from hopindex.backends.registry import Backends
from hopindex.core.models import Job, UnitKind
from hopindex.core.settings import Settings
from hopindex.evaluation.datasets import Question, load_questions
from hopindex.evaluation.efficiency import tper
from hopindex.evaluation.metrics import percentile
from hopindex.evaluation.runner import evaluate_method
from hopindex.methods.base import QueryOptions, QueryResult
from hopindex.methods.chunking import chunk_document
from hopindex.methods.phases import QueryPhase
from hopindex.methods.sirerag import aggregates, trees
from hopindex.methods.sirerag.clustering import cluster_nodes
from hopindex.methods.sirerag.method import SiReRagSettings
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer

METHODS = ("sirerag", "sirerag:pool=similarity", "naive")
CLUSTER_SHARE_TARGET = 0.25
RSS_TARGET_MB = 3 * 1024
LATENCY_RATIO_TARGET = 1.5


@dataclass
class BuildTimers:
    """Seconds one build spends in the clustering step (per ``tree:level``), in LLM
    calls (waited on by the build's thread) and in the embedder."""

    cluster_threads: int = 0  # BLAS and OpenMP threads inside a clustering call; 0: as is
    cluster_s: dict[str, float] = field(default_factory=dict)
    cluster_cpu_s: float = 0.0
    # The process's peak RSS when each tree level started clustering, and at its end.
    high_water_mb: dict[str, float] = field(default_factory=dict)
    # (seconds into the build, the call that just ended, RSS MB), kept where RSS grew
    # 50 MB or more since the last entry: where the memory comes from.
    rss_steps: list[tuple[float, str, int]] = field(default_factory=list)
    _started: float = field(default_factory=time.perf_counter)
    llm_s: float = 0.0
    embed_s: float = 0.0
    aggregates_s: float = 0.0  # reading propositions back by entity (the groups phase)
    vector_writes_s: float = 0.0
    keyword_writes_s: float = 0.0
    _local: threading.local = field(default_factory=threading.local)

    @contextmanager
    def installed(self, backends: Backends) -> Iterator[None]:
        """trees.py imports ``cluster_nodes`` by name: patched there. ``_cluster`` names
        the tree and level the call is for."""
        plan_cluster = trees._cluster

        def labelled(context: Any, tree: trees.Tree, level: int, nodes: Any) -> Any:
            key = self._local.key = trees.plan_key(tree, level)
            self.high_water_mb[f"before {key}"] = round(high_water_mb())
            try:
                return plan_cluster(context, tree, level, nodes)
            finally:
                self.high_water_mb[f"after {key}"] = round(high_water_mb())

        def timed_cluster(*args: Any, **kwargs: Any) -> Any:
            started, cpu = time.perf_counter(), time.process_time()
            try:
                if self.cluster_threads:
                    with threadpool_limits(limits=self.cluster_threads):
                        return cluster_nodes(*args, **kwargs)
                return cluster_nodes(*args, **kwargs)
            finally:
                key = getattr(self._local, "key", "?")
                self.cluster_s[key] = self.cluster_s.get(key, 0.0) + time.perf_counter() - started
                self.cluster_cpu_s += time.process_time() - cpu
                self._note_rss(f"cluster_nodes {key}")

        with ExitStack() as stack:
            stack.enter_context(patch.object(trees, "_cluster", labelled))
            stack.enter_context(patch.object(trees, "cluster_nodes", timed_cluster))
            for name in ("complete_json_many", "complete_text_many"):
                stack.enter_context(patch.object(LlmRunner, name, self._timer(
                    getattr(LlmRunner, name), "llm_s")))
            vectors, keywords = backends.vectors, backends.keywords
            stack.enter_context(patch.object(vectors, "upsert_vectors", self._timer(
                vectors.upsert_vectors, "vector_writes_s")))
            stack.enter_context(patch.object(keywords, "index_units", self._timer(
                keywords.index_units, "keyword_writes_s")))
            stack.enter_context(patch.object(aggregates, "entries_by_entity", self._timer(
                aggregates.entries_by_entity, "aggregates_s")))
            stack.enter_context(patch.object(SentenceTransformerEmbedder, "embed_texts",
                                              self._timer(SentenceTransformerEmbedder.embed_texts,
                                                          "embed_s")))
            yield

    def _timer(self, function: Callable[..., Any], attribute: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                setattr(self, attribute,
                        getattr(self, attribute) + time.perf_counter() - started)
                self._note_rss(function.__name__)
        return timed

    def _note_rss(self, label: str) -> None:
        rss = round(status_mb("VmRSS"))
        if not self.rss_steps or rss >= self.rss_steps[-1][2] + 50:
            self.rss_steps.append((round(time.perf_counter() - self._started, 1), label, rss))

    @property
    def clustering_s(self) -> float:
        return sum(self.cluster_s.values())


@dataclass
class Build:
    job: Job
    wall_s: float
    cpu_s: float  # this process's CPU seconds over the build, every thread
    timers: BuildTimers
    calls: dict[str, int]  # test-server requests by kind during the build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=("hotpot", "2wiki"), default="hotpot")
    parser.add_argument("--limit", type=int, default=100, help="questions to evaluate")
    parser.add_argument("--latency-ms", type=float, default=0.0,
                        help="test server latency per request")
    parser.add_argument("--cluster-threads", type=int, default=0,
                        help="cap BLAS/OpenMP threads inside each clustering call "
                             "(threadpoolctl); 0 leaves the libraries' defaults")
    parser.add_argument("--profile", type=Path,
                        help="write a cProfile of the first build to this file")
    parser.add_argument("--reuse-index", action="store_true",
                        help="only the queries, over the index an earlier run of this "
                             "corpus built (no build figures, no repeat build)")
    args = parser.parse_args()
    corpus_path, questions_path = dataset_files(args.corpus)
    questions = load_questions(questions_path)
    questions = questions[: args.limit]
    index = f"sirerag-{args.corpus}"
    load = {"start": os.getloadavg()[0]}
    server = LlmTestServer(LlmServerConfig(latency_s=args.latency_ms / 1000)).start_in_thread()
    try:
        if args.reuse_index:
            with _client(OUT / f"sirerag-{args.corpus}-data", server, wipe=False) as client:
                if index not in {i.name for i in client.indexes.list_indexes()}:
                    sys.exit(f"--reuse-index: no index {index!r}; run once without it")
                figures = {"queries": _queries(client, index, questions)}
            path = write_result(f"sirerag-queries-{args.corpus}", figures)
            print(f"wrote {path}")
            return
        with _client(OUT / f"sirerag-{args.corpus}-data", server) as client:
            build = _build(client, server, index, corpus_path, args.profile,
                           args.cluster_threads)
            build_rss_mb = high_water_mb()
            load["after_build"] = os.getloadavg()[0]
            figures = _build_figures(client, index, build)
            figures["peak_rss_mb_build"] = round(build_rss_mb)
            _print_build(figures)
            before = server.stats.count(Endpoint.CHAT)
            again = client.ingest(index, [corpus_path], method="sirerag")
            figures["second_ingest"] = {"llm_calls": server.stats.count(Endpoint.CHAT) - before,
                                        "state": again.state.value}
            print(f"second ingest: {figures['second_ingest']['llm_calls']} LLM calls "
                  f"(target 0), {again.state.value}")
            figures["queries"] = _queries(client, index, questions)
            trees_a = _summary_nodes(client, index)
        if args.corpus == "hotpot":
            with _client(OUT / f"sirerag-{args.corpus}-data-b", server) as client:
                second = _build(client, server, index, corpus_path, None,
                                args.cluster_threads)
                trees_b = _summary_nodes(client, index)
            figures["repeat_build"] = {
                **_time_figures(second),
                "summaries": len(trees_b), "identical": trees_a == trees_b,
                "differing_summaries": len(set(trees_a.items()) ^ set(trees_b.items()))}
            print(f"second build from scratch: {second.wall_s:.1f}s (clustering "
                  f"{second.timers.clustering_s:.1f}s, numba already compiled, per level "
                  f"{figures['repeat_build']['clustering_by_level_s']}); trees "
                  f"identical: {'yes' if trees_a == trees_b else 'no'} "
                  f"({len(trees_a)} vs {len(trees_b)} summaries)")
        load["end"] = os.getloadavg()[0]
        figures.update(corpus=args.corpus, latency_ms=args.latency_ms,
                       cluster_threads=args.cluster_threads, load_average_1m=load,
                       questions=len(questions), peak_rss_mb=round(high_water_mb()),
                       server=server.stats.as_dict())
    finally:
        server.stop()
    threads = f"-threads{args.cluster_threads}" if args.cluster_threads else ""
    path = write_result(f"sirerag-pipeline-{args.corpus}{threads}", figures)
    print(f"wrote {path}")


@contextmanager
def _client(data_dir: Path, server: LlmTestServer, *, wipe: bool = True
            ) -> Iterator[LocalClient]:
    if wipe:
        shutil.rmtree(data_dir, ignore_errors=True)
    settings = Settings(data_dir=data_dir, llm_model=server.config.model,
                        llm_base_url=server.base_url, llm_api_key="bench").resolved()
    with local_client(settings=settings) as client:
        # The model loads before the clock: the build's wall time is the build's own.
        client.service.backends.embedder.embed_texts(["Warm up the model."])
        yield client


def _build(client: LocalClient, server: LlmTestServer, index: str, corpus_path: Path,
           profile: Path | None, cluster_threads: int) -> Build:
    timers = BuildTimers(cluster_threads=cluster_threads)
    before = dict(server.stats.by_kind)
    profiler = cProfile.Profile() if profile else None
    with timers.installed(client.service.backends):
        started, cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        job = client.ingest(index, [corpus_path], method="sirerag")
        if profiler:
            profiler.disable()
        wall_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu
    if profiler and profile:
        profiler.dump_stats(profile)
    after = server.stats.by_kind
    return Build(job=job, wall_s=wall_s, cpu_s=cpu_s, timers=timers,
                 calls={k: v - before.get(k, 0) for k, v in after.items()})


def _build_figures(client: LocalClient, index: str, build: Build) -> dict[str, Any]:
    state = client.service.backends.state
    documents = state.get_documents(index, sorted(state.document_hashes(index)))
    chunks = sum(len(chunk_document(d)) for d in documents)
    levels = SiReRagSettings().levels
    plan_keys = [trees.plan_key(tree, level) for tree in trees.Tree for level in range(levels + 1)]
    plans = state.get_records(index, trees.PLANS, plan_keys)
    planned = {key: {"nodes": plans[key].get("nodes", 0), "clusters": len(plans[key]["clusters"])}
               for key in plan_keys if key in plans and plans[key]["clusters"]}
    return {
        "documents": len(documents), "chunks": chunks, "state": build.job.state.value,
        "errors": len(build.job.errors), **_time_figures(build),
        "proposition_calls": build.calls.get("propositions", 0),
        "summary_calls": build.calls.get("summary", 0),
        "planned_clusters": sum(p["clusters"] for p in planned.values()),
        "plans": planned,
        "units": {k.value: v for k, v in state.count_units(index).items()},
        "llm": build.job.as_dict()["llm"],
        "calls_by_kind": build.calls,
    }


def _time_figures(build: Build) -> dict[str, Any]:
    timers, wall = build.timers, build.wall_s
    return {
        "build_s": round(wall, 1), "clustering_s": round(timers.clustering_s, 1),
        "clustering_share": round(timers.clustering_s / wall, 3),
        "build_cpu_s": round(build.cpu_s, 1), "clustering_cpu_s": round(timers.cluster_cpu_s, 1),
        "clustering_cpu_share": round(timers.cluster_cpu_s / build.cpu_s, 3),
        "clustering_by_level_s": {k: round(v, 2) for k, v in sorted(timers.cluster_s.items())},
        "llm_wait_s": round(timers.llm_s, 1), "embed_s": round(timers.embed_s, 1),
        "aggregates_s": round(timers.aggregates_s, 1),
        "vector_writes_s": round(timers.vector_writes_s, 1),
        "keyword_writes_s": round(timers.keyword_writes_s, 1),
        "other_s": round(wall - timers.clustering_s - timers.llm_s - timers.embed_s
                         - timers.aggregates_s - timers.vector_writes_s
                         - timers.keyword_writes_s, 1),
        "high_water_mb": timers.high_water_mb, "rss_steps": timers.rss_steps,
    }


def _print_build(f: dict[str, Any]) -> None:
    print(f"build: {f['documents']} documents in {f['build_s']}s ({f['state']}, "
          f"{f['errors']} errors); clustering {f['clustering_s']}s = "
          f"{f['clustering_share']:.1%} (target < {CLUSTER_SHARE_TARGET:.0%}), LLM waits "
          f"{f['llm_wait_s']}s, embedding {f['embed_s']}s, aggregates "
          f"{f['aggregates_s']}s, vector writes {f['vector_writes_s']}s, keyword writes "
          f"{f['keyword_writes_s']}s, other {f['other_s']}s; "
          f"peak RSS {f['peak_rss_mb_build']} MB (target <= {RSS_TARGET_MB} MB)")
    print(f"clustering per level: {f['clustering_by_level_s']}; in CPU seconds "
          f"{f['clustering_cpu_s']} of the build's {f['build_cpu_s']} "
          f"({f['clustering_cpu_share']:.1%})")
    print(f"plans: {f['plans']}")
    print(f"peak RSS (MB) around each level's clustering: {f['high_water_mb']}")
    print(f"proposition calls {f['proposition_calls']} vs chunks {f['chunks']}; summary "
          f"calls {f['summary_calls']} vs planned clusters {f['planned_clusters']}")
    print(f"units: {f['units']}")
    tokens = {s: (u["prompt_tokens"], u["completion_tokens"])
              for s, u in f["llm"]["stages"].items()}
    print(f"tokens per phase (prompt, completion): {tokens}")


def _queries(client: LocalClient, index: str, questions: list[Question]) -> dict[str, Any]:
    """The three methods over the questions. Each query's phases are kept, and its wall
    time around ``service.query`` (what the evaluation code and the client's ``query``
    call), the same for every method, so that ``sirerag`` without its answer call
    compares with ``naive`` on one clock."""
    phases: list[dict[str, float]] = []
    service = client.service
    query = service.query

    def recording(index: str, question: str, method: str | None = None,
                  options: QueryOptions | None = None) -> QueryResult:
        started = time.perf_counter()
        result = query(index, question, method=method, options=options)
        phases.append(dict(result.usage.phases_s, total=time.perf_counter() - started))
        return result

    methods: dict[str, dict[str, Any]] = {}
    with patch.object(service, "query", recording):
        for method in METHODS:
            phases.clear()
            # The evaluation code `hopindex eval` runs, over the client's service.
            report, _ = evaluate_method(service, index, questions, method)
            assert report.llm is not None
            without_answer = [p["total"] - p.get(QueryPhase.ANSWER.value, 0.0) for p in phases]
            methods[method] = {
                "recall": report.recall, "latency_p50_ms": report.latency_p50_ms,
                "latency_p95_ms": report.latency_p95_ms, "tpq_s": report.tpq_s,
                "llm_calls_mean": report.llm.calls_mean,
                "prompt_tokens_mean": report.llm.prompt_tokens_mean,
                "pool_size": report.pool_size,
                "p50_without_answer_ms": percentile(without_answer, 50) * 1000,
                "phases_p50_ms": {name: round(percentile([p.get(name, 0.0) for p in phases],
                                                         50) * 1000, 2)
                                  for name in dict.fromkeys(n for p in phases for n in p)},
            }
    both, similarity = methods["sirerag"], methods["sirerag:pool=similarity"]
    paired = _paired_latency(client, index, questions)
    ratio = paired["ratio"]
    figures = {"methods": methods, "sirerag_p50_without_answer_over_naive_p50": ratio,
               "paired_latency": paired,
               "tper_sirerag_vs_similarity": tper(both["tpq_s"], both["pool_size"] or 0,
                                                  similarity["tpq_s"],
                                                  similarity["pool_size"] or 0)}
    for method, m in methods.items():
        recall = "/".join(f"{m['recall'][k]:.3f}" for k in (1, 2, 5, 10, 20))
        print(f"{method}: phases p50 (ms) {m['phases_p50_ms']}")
        print(f"{method}: R@1/2/5/10/20 {recall}, p50 "
              f"{m['latency_p50_ms']:.1f} ms, p95 {m['latency_p95_ms']:.1f} ms, TPQ "
              f"{m['tpq_s'] * 1000:.1f} ms, calls/query {m['llm_calls_mean']:.2f}, pool "
              f"{m['pool_size']}")
    print(f"paired, question by question: sirerag p50 without the answer call "
          f"{paired['sirerag_p50_ms']:.1f} ms vs naive p50 {paired['naive_p50_ms']:.1f} ms "
          f"(no answer call): {ratio:.2f}x "
          f"(target <= {LATENCY_RATIO_TARGET}x); TPER {figures['tper_sirerag_vs_similarity']}")
    return figures


def _paired_latency(client: LocalClient, index: str, questions: list[Question],
                    rounds: int = 3) -> dict[str, Any]:
    """``sirerag`` without its answer call against ``naive``, question by question and
    in turn (which goes first alternates), so that both meet the same machine load:
    the blocks of ``evaluate_method`` run minutes apart on a shared machine."""
    walls: dict[str, list[float]] = {"sirerag": [], "naive": []}
    for round_ in range(rounds):
        for n, question in enumerate(questions):
            order = ("sirerag", "naive") if (n + round_) % 2 == 0 else ("naive", "sirerag")
            for method in order:
                started = time.perf_counter()
                result = client.query(index, question.question, method=method, k=20)
                wall = time.perf_counter() - started
                walls[method].append(wall - result.usage.phases_s.get(QueryPhase.ANSWER.value,
                                                                       0.0))
    sirerag_ms = percentile(walls["sirerag"], 50) * 1000
    naive_ms = percentile(walls["naive"], 50) * 1000
    return {"rounds": rounds, "sirerag_p50_ms": round(sirerag_ms, 2),
            "naive_p50_ms": round(naive_ms, 2), "ratio": round(sirerag_ms / naive_ms, 3)}


def _summary_nodes(client: LocalClient, index: str
                   ) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every summary unit of both trees: source key → (text, children)."""
    state = client.service.backends.state
    unit_ids: set[str] = set()
    for tree in trees.Tree:
        groups = state.get_groups(index, tree.namespace,
                                  state.list_group_keys(index, tree.namespace))
        unit_ids.update(u for g in groups.values() for u in g.unit_ids)
    return {u.source_key: (u.text, tuple(u.metadata.get("children", [])))
            for u in state.get_units(index, sorted(unit_ids)) if u.kind is UnitKind.SUMMARY}


if __name__ == "__main__":
    main()
