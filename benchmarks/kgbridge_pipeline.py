"""Partitioned-KG BridgeRAG end to end against the local test server: build, links,
the planning of stage 2, and queries of at most eight calls.

One eager build (no broker, embedded backends, the default embedder) of a
``kgbridge`` index from scratch: documents and chunks, the LLM calls the server
counted by kind against the design (one extraction call and one gleaning call per
chunk, one entity-summary call per document with an entity, one document-summary call per
document, one adjudication call per candidate pair passing the S_emb pre-filter), units
by kind, wall time, peak RSS and tokens per phase. The links: names found in
``min_docs`` to ``max_docs`` documents, candidate pairs, pairs pre-filtered, the
adjudication calls with the pre-filter and without it (every candidate pair not
rejected by hand: read from the links records, no second build), links stored, and
the pairs whose S_emb is below the lossless bound. The planning of stage 2 (what
decides which pairs the model is asked about) as a share of the build's wall time:
the time inside ``build_links`` less its adjudication calls, the scheduler's planning
of the links phase's keys (``start_step`` from the failed keys' read to the step's
claim) and the merging of the touched keys into the job's scope.

Then ``kgbridge`` and ``naive`` over the questions through ``evaluate_method``:
Recall@k through provenance, EM/F1, LLM calls per query (server and usage; at most
five), tokens per query, and ``kgbridge``'s p50 without its LLM calls (each query's
wall time less its ``judge`` (plan), ``reason`` (sufficiency) and ``answer`` phases)
with the median of every phase; and that p50 against ``naive``'s, question by
question in turn, so both meet the same load.

The test model's replies are deterministic stand-ins (``hopindex/testing/llm_kgbridge.py``):
recall measures the pipeline, not a model. The LLM response cache is off, so every
call reaches the server and is counted there.

    .venv/bin/python benchmarks/kgbridge_pipeline.py [--corpus hotpot|2wiki] [--limit 100]
        [--torch-threads N] [--profile FILE] [--reuse-index]
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import os
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, dataset_files, high_water_mb, local_client, write_result
from query_log import QueryLog

from hopindex.api.client.local import LocalClient
from hopindex.backends.llm.runner import LlmRunner
from hopindex.core.models import Job
from hopindex.core.settings import CacheMode, Settings
from hopindex.evaluation.datasets import Question, load_questions
from hopindex.evaluation.metrics import percentile
from hopindex.evaluation.runner import evaluate_method
from hopindex.methods.base import QueryOptions, QueryResult
from hopindex.methods.chunking import chunk_document
from hopindex.methods.kgbridge import graphs, links
from hopindex.methods.kgbridge.method import KgBridgeIndexMethod
from hopindex.methods.kgbridge.settings import KgBridgeSettings
from hopindex.methods.phases import QueryPhase
from hopindex.methods.plugin import GroupsPhase, Scope, phase_name
from hopindex.scheduler.failed_items import failed_item_ids
from hopindex.scheduler.lifecycle import start_phase
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer

METHODS = ("kgbridge", "naive")
# The plan, per refinement iteration a sufficiency check and a re-plan (3), the answer.
MAX_CALLS_PER_QUERY = 8
PLANNING_SHARE_TARGET = 0.05
LOCAL_P50_TARGET_MS = 60.0
# The query's LLM calls, by the phase that times them (query.py): the plan, the
# sufficiency checks and the answer.
LLM_PHASES = (QueryPhase.JUDGE.value, QueryPhase.REASON.value, QueryPhase.ANSWER.value)
LINKS_PHASE = phase_name(graphs.METHOD, "links")
PIPELINE = "hopindex.scheduler.pipeline"  # start_step, whose planning of the keys is timed
# The test server's task kinds (llm_responses.TaskKind) of the build's calls.
KIND_EXTRACT, KIND_GLEAN, KIND_SUMMARIES, KIND_DOC_SUMMARY, KIND_ADJUDICATE = (
    "kg_extract", "kg_glean", "kg_entity_summaries", "kg_doc_summary", "kg_adjudicate")


@dataclass
class BuildTimers:
    """Seconds one build spends in the links phase (and there in its adjudication
    calls and its reads), in the scheduler's planning of that phase's keys, merging
    touched keys into the scope, and in the documents phase's LLM calls."""

    links_s: float = 0.0  # inside build_links, every batch
    links_llm_s: float = 0.0  # complete_json_many called from build_links
    candidate_ends_s: float = 0.0  # mentions, graph records and titles of the keys
    vector_reads_s: float = 0.0  # the entity summaries' stored vectors
    links_batches: int = 0
    scheduler_plan_s: float = 0.0  # start_step: the links keys, up to claiming the step
    scope_touch_s: float = 0.0
    mentions_s: float = 0.0  # the documents phase storing each document's entity keys
    graphs_llm_s: float = 0.0  # every other LLM call of the build
    profiler: cProfile.Profile | None = None  # of build_links, when asked for
    _local: threading.local = field(default_factory=threading.local)

    @contextmanager
    def installed(self, client: LocalClient) -> Iterator[None]:
        """``method.py`` holds ``build_links`` in its phase: the phase is replaced by
        one holding the timed function. ``build_links`` and ``run_graphs`` call the
        functions timed here by their module's name."""
        phases = tuple(replace(p, build=self._timed_links(p.build))
                       if isinstance(p, GroupsPhase) else p
                       for p in KgBridgeIndexMethod.phases)
        with ExitStack() as stack:
            stack.enter_context(patch.object(KgBridgeIndexMethod, "phases", phases))
            stack.enter_context(patch.object(links, "candidate_ends", self._timer(
                links.candidate_ends, "candidate_ends_s")))
            vectors = client.service.backends.vectors
            stack.enter_context(patch.object(vectors, "get_vectors", self._timer(
                vectors.get_vectors, "vector_reads_s")))
            stack.enter_context(patch.object(graphs, "replace_mentions", self._timer(
                graphs.replace_mentions, "mentions_s")))
            stack.enter_context(patch.object(Scope, "touch", self._timer(
                Scope.touch, "scope_touch_s")))
            for name in ("complete_json_many", "complete_text_many"):
                stack.enter_context(patch.object(LlmRunner, name, self._timed_llm(
                    getattr(LlmRunner, name))))
            stack.enter_context(patch(f"{PIPELINE}.failed_item_ids",
                                      self._plan_started(failed_item_ids)))
            stack.enter_context(patch(f"{PIPELINE}.start_phase", self._plan_ended(start_phase)))
            yield

    def _timed_links(self, build: Callable[..., Any]) -> Callable[..., Any]:
        def timed(context: Any, keys: list[str]) -> Any:
            self._local.in_links = True
            started = time.perf_counter()
            try:
                if self.profiler is not None:
                    return self.profiler.runcall(build, context, keys)
                return build(context, keys)
            finally:
                self.links_s += time.perf_counter() - started
                self.links_batches += 1
                self._local.in_links = False
        return timed

    def _timed_llm(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - started
                if getattr(self._local, "in_links", False):
                    self.links_llm_s += elapsed
                else:
                    self.graphs_llm_s += elapsed
        return timed

    def _plan_started(self, function: Callable[..., Any]) -> Callable[..., Any]:
        # The groups branch of start_step reads the failed keys first, then unites them
        # with the touched ones and claims the step: that span is its planning.
        def timed(store: Any, index: str, phase: str) -> Any:
            if phase == LINKS_PHASE:
                self._local.plan_started = time.perf_counter()
            return function(store, index, phase)
        return timed

    def _plan_ended(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            finally:
                started = getattr(self._local, "plan_started", None)
                if started is not None:
                    self.scheduler_plan_s += time.perf_counter() - started
                    self._local.plan_started = None
        return timed

    def _timer(self, function: Callable[..., Any], attribute: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                setattr(self, attribute, getattr(self, attribute) + time.perf_counter() - started)
        return timed

    def planning(self) -> dict[str, float]:
        links_planning = self.links_s - self.links_llm_s
        return {"links_phase_s": self.links_s, "adjudication_llm_s": self.links_llm_s,
                "links_planning_s": links_planning,
                "candidate_ends_s": self.candidate_ends_s,
                "vector_reads_s": self.vector_reads_s,
                "pairing_s_emb_and_writes_s": (links_planning - self.candidate_ends_s
                                               - self.vector_reads_s),
                "scheduler_plan_s": self.scheduler_plan_s,
                "scope_touch_s": self.scope_touch_s,
                "total_s": links_planning + self.scheduler_plan_s + self.scope_touch_s}


def _trace_fields(result: QueryResult) -> dict[str, Any]:
    trace = result.trace
    return {"stopped": trace.get("stopped"),
            "links_followed": len(trace.get("links_followed", [])),
            "iterations": len(trace.get("iterations", [])),
            "degraded": bool(trace.get("degraded"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=("hotpot", "2wiki"), default="hotpot")
    parser.add_argument("--limit", type=int, default=100, help="questions to evaluate")
    parser.add_argument("--profile", type=Path,
                        help="write a cProfile of build_links (every batch) to this file")
    parser.add_argument("--reuse-index", action="store_true",
                        help="only the queries, over the index an earlier run of this "
                             "corpus built (no build figures)")
    parser.add_argument("--torch-threads", type=int, default=0,
                        help="torch intra-op threads in this process (the embedder); 0 "
                             "leaves torch's default")
    args = parser.parse_args()
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    corpus_path, questions_path = dataset_files(args.corpus)
    questions = load_questions(questions_path)
    questions = questions[: args.limit]
    # Named as `hopindex eval --index kg-CORPUS --index-method kgbridge` names its index,
    # so that an eval over this data dir reuses it.
    index = f"kg-{args.corpus}-kgbridge"
    data_dir = OUT / f"kgbridge-{args.corpus}-data"
    load = {"start": os.getloadavg()[0]}
    figures: dict[str, Any] = {"corpus": args.corpus, "questions": len(questions),
                               "torch_threads": args.torch_threads}
    server = LlmTestServer(LlmServerConfig(latency_s=0)).start_in_thread()
    try:
        with _client(data_dir, server, wipe=not args.reuse_index) as client:
            if args.reuse_index:
                if index not in {i.name for i in client.indexes.list_indexes()}:
                    sys.exit(f"--reuse-index: no index {index!r} under {data_dir}; run once "
                             "without it")
            else:
                figures["build"] = _build(client, server, index, corpus_path, args.profile)
                figures["links"] = _links_figures(client, index, figures["build"])
                load["after_build"] = os.getloadavg()[0]
            figures["queries"] = _queries(client, server, index, questions)
        load["end"] = os.getloadavg()[0]
        figures.update(load_average_1m=load, peak_rss_mb=round(high_water_mb()),
                       server=server.stats.as_dict())
    finally:
        server.stop()
    name = "kgbridge-queries" if args.reuse_index else "kgbridge-pipeline"
    threads = f"-threads{args.torch_threads}" if args.torch_threads else ""
    path = write_result(f"{name}-{args.corpus}{threads}", figures)
    print(f"wrote {path}")


@contextmanager
def _client(data_dir: Path, server: LlmTestServer, *, wipe: bool) -> Iterator[LocalClient]:
    if wipe:
        shutil.rmtree(data_dir, ignore_errors=True)
    settings = Settings(data_dir=data_dir, llm_model=server.config.model,
                        llm_base_url=server.base_url, llm_api_key="bench",
                        llm_cache=CacheMode.OFF).resolved()
    with local_client(settings=settings) as client:
        # The models load before the clock: the build's wall time is the build's own.
        client.service.backends.embedder.embed_texts(["Warm up the model."])
        yield client


def _build(client: LocalClient, server: LlmTestServer, index: str, corpus_path: Path,
           profile: Path | None) -> dict[str, Any]:
    profiler = cProfile.Profile() if profile else None
    timers = BuildTimers(profiler=profiler)
    before = dict(server.stats.by_kind)
    with timers.installed(client):
        started, cpu = time.perf_counter(), time.process_time()
        job = client.ingest(index, [corpus_path], method="kgbridge")
        wall_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu
    if profiler and profile:
        profiler.dump_stats(profile)
        print(f"profile of build_links: {profile}")
    calls = {k: v - before.get(k, 0) for k, v in server.stats.by_kind.items()
             if v - before.get(k, 0)}
    return _build_figures(client, index, job, wall_s, cpu_s, calls, timers)


def _build_figures(client: LocalClient, index: str, job: Job, wall_s: float, cpu_s: float,
                   calls: dict[str, int], timers: BuildTimers) -> dict[str, Any]:
    state = client.service.backends.state
    doc_ids = sorted(state.document_hashes(index))
    documents = state.get_documents(index, doc_ids)
    chunks = sum(len(chunk_document(d)) for d in documents)
    records = state.get_records(index, graphs.GRAPHS, doc_ids)
    with_entities = sum(1 for r in records.values() if r.get("entities"))
    planning = timers.planning()
    llm = job.as_dict()["llm"]
    figures: dict[str, Any] = {
        "documents": len(documents), "chunks": chunks, "graphs": len(records),
        "documents_with_entities": with_entities, "state": job.state.value,
        "errors": len(job.errors), "wall_s": round(wall_s, 2), "cpu_s": round(cpu_s, 2),
        "calls_by_kind": calls,
        "expected_calls": {KIND_EXTRACT: chunks, KIND_GLEAN: chunks,
                           KIND_SUMMARIES: with_entities,
                           KIND_DOC_SUMMARY: len(documents)},
        "units": {k.value: v for k, v in state.count_units(index).items()},
        "tokens_by_phase": {s: {"prompt": u["prompt_tokens"], "completion": u["completion_tokens"]}
                            for s, u in llm["stages"].items()},
        "tokens": {"prompt": llm["prompt_tokens"], "completion": llm["completion_tokens"],
                   "calls": llm["calls"]},
        "graphs_llm_s": round(timers.graphs_llm_s, 2),
        "mentions_writes_s": round(timers.mentions_s, 3),
        "links_batches": timers.links_batches,
        "stage2_planning": {k: round(v, 3) for k, v in planning.items()},
        "stage2_planning_share": round(planning["total_s"] / wall_s, 4),
        "stage2_planning_target": PLANNING_SHARE_TARGET,
        "peak_rss_mb": round(high_water_mb())}
    match = {kind: calls.get(kind, 0) == want
             for kind, want in figures["expected_calls"].items()}
    figures["calls_match_design"] = match
    print(f"build: {len(documents)} documents → {chunks} chunks in {wall_s:.1f}s "
          f"({job.state.value}, {len(job.errors)} errors), CPU {cpu_s:.1f}s, peak RSS "
          f"{figures['peak_rss_mb']} MB", flush=True)
    print("LLM calls by kind (server): " + ", ".join(
        f"{kind} {calls.get(kind, 0)} (design {want}: {'ok' if match[kind] else 'NO'})"
        for kind, want in figures["expected_calls"].items())
        + f", {KIND_ADJUDICATE} {calls.get(KIND_ADJUDICATE, 0)}; all {calls}", flush=True)
    print(f"units: {figures['units']}")
    print(f"tokens per phase: {figures['tokens_by_phase']}")
    p = figures["stage2_planning"]
    print(f"stage-2 planning: {p['total_s']}s = {figures['stage2_planning_share']:.2%} of the "
          f"build (target <= {PLANNING_SHARE_TARGET:.0%}): build_links {p['links_phase_s']}s "
          f"less adjudication calls {p['adjudication_llm_s']}s = {p['links_planning_s']}s "
          f"(candidate_ends {p['candidate_ends_s']}s, vector reads {p['vector_reads_s']}s, "
          f"pairing/S_emb/writes {p['pairing_s_emb_and_writes_s']}s) over "
          f"{timers.links_batches} batches; scheduler key planning {p['scheduler_plan_s']}s; "
          f"scope touches {p['scope_touch_s']}s", flush=True)
    return figures


def _links_figures(client: LocalClient, index: str, build: dict[str, Any]) -> dict[str, Any]:
    """The links records' counts, and every candidate pair's S_emb again from the
    stored vectors (outside the build's clock) for the count below the lossless bound."""
    settings = KgBridgeSettings()
    state, vectors = client.service.backends.state, client.service.backends.vectors
    doc_ids = sorted(state.document_hashes(index))
    mentions = state.mentions_of_documents(index, doc_ids)
    docs_of: dict[str, set[str]] = {}
    for doc_id, found in mentions.items():
        for mention in found:
            docs_of.setdefault(mention.entity, set()).add(doc_id)
    names = [k for k, d in docs_of.items() if settings.min_docs <= len(d) <= settings.max_docs]
    records = state.get_records(index, graphs.LINKS, sorted(docs_of)) if docs_of else {}
    total = Counter[str]()
    for record in records.values():
        for field_name in ("candidates", "prefiltered", "adjudicated", "rejected"):
            total[field_name] += int(record.get(field_name, 0))
        total["links"] += len(record.get("links", []))
    graph_records = state.get_records(index, graphs.GRAPHS, doc_ids)
    unit_of = {(doc_id, str(e["key"])): str(e["unit_id"])
               for doc_id, r in graph_records.items() for e in r.get("entities", [])}
    wanted = sorted({unit_of[(d, k)] for k in names for d in docs_of[k] if (d, k) in unit_of})
    stored = {r.unit_id: np.asarray(r.vector, dtype=np.float64)
              for r in vectors.get_vectors(index, wanted)}
    scores = []
    for key in names:
        units = [unit_of[(d, key)] for d in sorted(docs_of[key]) if (d, key) in unit_of]
        for a, b in itertools.combinations([u for u in units if u in stored], 2):
            va, vb = stored[a], stored[b]
            norm = float(np.linalg.norm(va) * np.linalg.norm(vb))
            scores.append(float(va @ vb) / norm if norm else 0.0)
    bound = settings.lossless_bound()
    calls = build["calls_by_kind"].get(KIND_ADJUDICATE, 0)
    figures = {
        "names_mentioned": len(docs_of), "candidate_names": len(names),
        "keys_with_pairs": len(records), "candidate_pairs": total["candidates"],
        "pairs_recomputed": len(scores), "prefiltered": total["prefiltered"],
        "rejected_by_hand": total["rejected"],
        "adjudication_calls_with_prefilter": total["adjudicated"],
        "adjudication_calls_without_prefilter": total["candidates"] - total["rejected"],
        "adjudication_calls_server": calls,
        "links_stored": total["links"],
        "min_embedding_score": settings.min_embedding_score, "lossless_bound": bound,
        "pairs_below_lossless_bound": sum(1 for s in scores if s < bound),
        "pairs_below_min_embedding_score": sum(1 for s in scores
                                               if s < settings.min_embedding_score),
        "s_emb_quantiles": ({q: round(float(np.quantile(scores, q)), 3)
                             for q in (0.0, 0.1, 0.5, 0.9, 1.0)} if scores else {})}
    print(f"links: {len(docs_of)} names, {len(names)} in {settings.min_docs}..{settings.max_docs} "
          f"documents, {len(records)} with pairs; {total['candidates']} candidate pairs "
          f"(recomputed {len(scores)}), {total['prefiltered']} pre-filtered; adjudication calls "
          f"{total['adjudicated']} with the S_emb pre-filter (server {calls}: "
          f"{'ok' if calls == total['adjudicated'] else 'NO'}), "
          f"{figures['adjudication_calls_without_prefilter']} without; "
          f"{total['links']} links stored; {figures['pairs_below_lossless_bound']} pairs with "
          f"S_emb below the lossless bound {bound:.3f}; S_emb quantiles "
          f"{figures['s_emb_quantiles']}", flush=True)
    return figures


def _evaluate(client: LocalClient, server: LlmTestServer, index: str,
              questions: list[Question], method: str) -> dict[str, Any]:
    # One query first, not counted: lazy loads stay out of p50.
    client.query(index, questions[0].question, method=method, k=QueryOptions().k)
    # The evaluation code `hopindex eval` runs, over the client's service.
    log = QueryLog(server, describe=_trace_fields)
    with log.installed(client):
        report, _ = evaluate_method(client.service, index, questions, method)
    rows = log.rows
    assert report.llm is not None
    local_ms = [(r["wall_s"] - sum(r["phases"].get(p, 0.0) for p in LLM_PHASES)) * 1000
                for r in rows]
    names = list(dict.fromkeys(n for r in rows for n in r["phases"]))
    phases = {n: round(percentile([r["phases"].get(n, 0.0) * 1000 for r in rows], 50), 2)
              for n in names}
    phases["other"] = round(percentile([(r["wall_s"] - sum(r["phases"].values())) * 1000
                                        for r in rows], 50), 2)
    tokens = [float(r["tokens"]) for r in rows]
    return {
        "recall": report.recall,
        "answers": (None if report.answers is None else
                    {"answered": report.answers.answered, "em": report.answers.exact_match,
                     "f1": report.answers.f1, "accuracy": report.answers.accuracy}),
        "latency_p50_ms": report.latency_p50_ms, "latency_p95_ms": report.latency_p95_ms,
        "p50_without_llm_ms": round(percentile(local_ms, 50), 2),
        "p95_without_llm_ms": round(percentile(local_ms, 95), 2),
        "phase_p50_ms": phases,
        "llm_calls_per_query": {"mean": report.llm.calls_mean,
                                "max": max(r["llm_calls"] for r in rows),
                                "server_max": max(r["server_calls"] for r in rows),
                                "server_mean": sum(r["server_calls"] for r in rows) / len(rows)},
        "tokens_per_query": {"mean": sum(tokens) / len(tokens),
                             "p95": percentile(tokens, 95),
                             "prompt_mean": report.llm.prompt_tokens_mean,
                             "completion_mean": report.llm.completion_tokens_mean},
        "stopped": dict(Counter(str(r["stopped"]) for r in rows if r["stopped"])),
        "links_followed_mean": sum(r["links_followed"] for r in rows) / len(rows),
        "iterations_mean": sum(r["iterations"] for r in rows) / len(rows),
        "degraded_queries": sum(1 for r in rows if r["degraded"])}


def _queries(client: LocalClient, server: LlmTestServer, index: str,
             questions: list[Question]) -> dict[str, Any]:
    methods = {m: _evaluate(client, server, index, questions, m) for m in METHODS}
    for method, m in methods.items():
        recall = "/".join(f"{m['recall'][k]:.3f}" for k in (1, 2, 5, 10, 20))
        answers = m["answers"]
        scored = (f"EM {answers['em']:.3f} F1 {answers['f1']:.3f} ({answers['answered']} "
                  "answered)" if answers else "no answers")
        calls = m["llm_calls_per_query"]
        print(f"{method}: R@1/2/5/10/20 {recall}; {scored}; calls/query mean "
              f"{calls['mean']:.2f} max {calls['max']} (server max {calls['server_max']}); "
              f"tokens/query {m['tokens_per_query']['mean']:.0f}; p50 "
              f"{m['latency_p50_ms']:.1f} ms", flush=True)
    kg = methods["kgbridge"]
    kg["calls_within_bound"] = (kg["llm_calls_per_query"]["max"] <= MAX_CALLS_PER_QUERY
                                and kg["llm_calls_per_query"]["server_max"]
                                <= MAX_CALLS_PER_QUERY)
    paired = _paired_latency(client, index, questions)
    print(f"kgbridge: p50 without LLM calls {kg['p50_without_llm_ms']:.1f} ms (target <= "
          f"{LOCAL_P50_TARGET_MS:.0f} ms on 2Wiki), p95 {kg['p95_without_llm_ms']:.1f} ms; "
          f"phase p50s (ms) {kg['phase_p50_ms']}; stopped {kg['stopped']}; links followed "
          f"{kg['links_followed_mean']:.2f}/query; sufficiency checks "
          f"{kg['iterations_mean']:.2f}/query; at most {MAX_CALLS_PER_QUERY} calls: "
          f"{'yes' if kg['calls_within_bound'] else 'NO'}", flush=True)
    print(f"paired, question by question: kgbridge without LLM {paired['kgbridge_p50_ms']:.1f} "
          f"ms vs naive {paired['naive_p50_ms']:.1f} ms", flush=True)
    return {"methods": methods, "target_ms": LOCAL_P50_TARGET_MS, "paired_latency": paired}


def _paired_latency(client: LocalClient, index: str, questions: list[Question],
                    rounds: int = 1) -> dict[str, Any]:
    """``kgbridge`` without its LLM calls against ``naive``, question by question and in
    turn (which goes first alternates), so both meet the same machine load."""
    walls: dict[str, list[float]] = {"kgbridge": [], "naive": []}
    for round_ in range(rounds):
        for n, question in enumerate(questions):
            order = METHODS if (n + round_) % 2 == 0 else METHODS[::-1]
            for method in order:
                started = time.perf_counter()
                result = client.query(index, question.question, method=method, k=20)
                wall = time.perf_counter() - started
                walls[method].append(wall - sum(result.usage.phases_s.get(p, 0.0)
                                                for p in LLM_PHASES))
    kg_ms, naive_ms = (percentile(walls[m], 50) * 1000 for m in METHODS)
    return {"rounds": rounds, "kgbridge_p50_ms": round(kg_ms, 2),
            "naive_p50_ms": round(naive_ms, 2), "ratio": round(kg_ms / naive_ms, 3)}


if __name__ == "__main__":
    main()
