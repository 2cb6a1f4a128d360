"""One machine, embedded engines, a broker: query through the API while an ingest runs.

A real ``hopindex serve``, two LLM workers (``stage1,stage2,control``) and the engine
owner (``hopindex worker --queues embed``, which also takes the engine queue) on a
private Redis, over Qdrant Edge and tantivy. The LLM test server answers after
``--latency-ms`` (its embeddings too: the API and the owner embed through it rather
than each loading a CPU model). The HotpotQA-100 corpus is ingested in IndexRAG mode
through the API while ``--clients`` threads query through the API for the whole
ingest; then the same clients query the finished index. LLM response caching is off,
so every query makes its calls.

Reported: errors (must be 0), query p50/p95 during the ingest and after it, the
ingest's duration, one engine call's round trip to the owner, and whether the index
ends with exactly the unit ids and texts of an eager in-process build (the reference
is built against a second test server without latency: replies do not depend on it).

    .venv/bin/python benchmarks/one_machine.py [--latency-ms 200] [--clients 4]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import replace
from importlib.resources import files
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import local_client, write_result

from hopindex import Client
from hopindex.api.client.local import LocalClient
from hopindex.backends.registry import open_keyword_index, open_vector_store
from hopindex.core.errors import HopindexError
from hopindex.core.models import JobState, Stage
from hopindex.core.settings import CacheMode, Settings
from hopindex.evaluation.metrics import percentile
from hopindex.methods.base import QueryOptions
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from hopindex.testing.redis_server import running_redis
from hopindex.testing.workers import HopindexProcess, WorkerProcess

INDEX = "hotpot"
SERVE_READY = "hopindex API on "
AFTER_QUERIES = 200
ENGINE_CALLS = 300
JOB_TIMEOUT_S = 1800.0
# What the clients ask for: the service's default k (the client's own default is 10).
QUERY_K = QueryOptions().k


def sample(name: str) -> object:
    return json.loads((files("hopindex") / "sample" / "hotpotqa-100" / name).read_text())


def corpus_jsonl(tmp: Path) -> Path:
    corpus = sample("corpus.json")
    assert isinstance(corpus, dict)
    out = tmp / "hotpotqa-100.jsonl"
    with out.open("w") as fh:
        for title, sentences in corpus.items():
            fh.write(json.dumps({"title": title, "text": "".join(sentences)}) + "\n")
    return out


def settings_for(data_dir: Path, server: LlmTestServer, redis_url: str = "") -> Settings:
    return Settings(
        data_dir=data_dir, broker_url=redis_url, state_url=redis_url,
        llm_model=server.config.model, llm_base_url=server.base_url, llm_api_key="bench",
        embedder_url=f"openai://{server.config.embedding_model}", llm_cache=CacheMode.OFF,
        llm_concurrency=1, stage1_batch_docs=8, stage2_batch_entities=16).resolved()


def unit_texts(client: LocalClient) -> dict[str, str]:
    state = client.service.backends.state
    doc_ids = sorted(state.document_hashes(INDEX))
    return {u.unit_id: u.text for u in state.units_of_documents(INDEX, doc_ids)}


def eager_reference(tmp: Path, corpus: Path) -> tuple[dict[str, str], float]:
    with LlmTestServer(LlmServerConfig()) as server:
        started = time.perf_counter()
        with local_client(settings=replace(settings_for(tmp / "eager", server),
                                           llm_concurrency=16)) as eager:
            job = eager.ingest(INDEX, [corpus])
            if job.state is not JobState.SUCCEEDED or job.errors:
                raise SystemExit(f"eager reference build: {job.state.value} {job.reason}")
            return unit_texts(eager), time.perf_counter() - started


class Clients:
    """``n`` threads asking through the API in a loop; latencies and errors by phase."""

    def __init__(self, api: Client, questions: list[str], n: int) -> None:
        self.api, self.questions, self.n = api, questions, n
        self.phase = "during"
        self.latency_ms: dict[str, list[float]] = {"during": [], "after": []}
        # Per query, the time in its engine calls (dense and BM25 search, each a round
        # trip to the owner), as the query's own phase timings report it.
        self.engines_ms: dict[str, list[float]] = {"during": [], "after": []}
        # When each query of the ingest ended (perf_counter), beside its latency.
        self.ended_during: list[tuple[float, float]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._asked = 0
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(n)]

    def _next(self) -> tuple[str, str] | None:
        with self._lock:
            if self.phase == "after" and self._asked >= AFTER_QUERIES:
                return None
            question = self.questions[self._asked % len(self.questions)]
            self._asked += 1
            return self.phase, question

    def _run(self) -> None:
        while not self._stop.is_set():
            picked = self._next()
            if picked is None:
                return
            phase, question = picked
            started = time.perf_counter()
            try:
                result = self.api.query(INDEX, question, k=QUERY_K)
            except HopindexError as exc:
                with self._lock:
                    self.errors.append(f"{phase}: {exc}"[:300])
                continue
            took_ms = (time.perf_counter() - started) * 1000
            phases = result.usage.phases_s
            engines_s = phases.get("dense_search", 0.0) + phases.get("keyword_search", 0.0)
            with self._lock:
                self.latency_ms[phase].append(took_ms)
                self.engines_ms[phase].append(engines_s * 1000)
                if phase == "during":
                    self.ended_during.append((time.perf_counter(), took_ms))

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def switch_to_after(self) -> None:
        with self._lock:
            self.phase, self._asked = "after", 0

    def join(self) -> None:
        for thread in self._threads:
            thread.join(timeout=600)

    def stop(self) -> None:
        self._stop.set()
        self.join()


def engine_round_trips(settings: Settings) -> list[float]:
    """One keyword search at a time from this process, through the owner (ms each)."""
    with local_client(settings=settings) as reader:
        keywords = reader.service.backends.keywords
        took: list[float] = []
        for i in range(ENGINE_CALLS):
            started = time.perf_counter()
            keywords.search_text(INDEX, f"capital city {i}", 10)
            took.append((time.perf_counter() - started) * 1000)
    return took


def run(args: argparse.Namespace, tmp: Path, redis_url: str) -> dict[str, object]:
    corpus = corpus_jsonl(tmp)
    expected, eager_s = eager_reference(tmp, corpus)
    print(f"eager reference: {len(expected)} units in {eager_s:.1f} s", flush=True)
    records = sample("questions.json")
    assert isinstance(records, list)
    questions = [str(r["question"]) for r in records]
    server = LlmTestServer(LlmServerConfig(latency_s=args.latency_ms / 1000)).start_in_thread()
    settings = settings_for(tmp / "data", server, redis_url)
    processes: list[HopindexProcess] = [
        WorkerProcess(settings, ["embed"], concurrency=4, name="engines",
                      log_path=tmp / "engines.log")]
    processes += [WorkerProcess(settings, ["stage1", "stage2", "control"], concurrency=4,
                                name=f"llm{i}", log_path=tmp / f"llm{i}.log") for i in (1, 2)]
    # The workers keep one LLM call per prefork child; the API's threads share one
    # process, so it gets the default number of calls in flight.
    serve = HopindexProcess(replace(settings, llm_concurrency=16), ["serve", "--port", "0"],
                            name="serve", log_path=tmp / "serve.log", ready_mark=SERVE_READY)
    processes.append(serve)
    clients: Clients | None = None
    try:
        for process in processes:
            process.wait_ready()
        found = re.search(SERVE_READY + r"(http://\S+)", serve.log_text())
        assert found is not None
        api = Client.connect(found.group(1))
        clients = Clients(api, questions, args.clients)
        # Polls the job and reads the units beside the API: with a broker no server owns
        # the engines, and this process's service reaches them through their owner.
        with local_client(settings=settings) as reader:
            started = time.perf_counter()
            job = api.ingest(INDEX, [corpus], method="indexrag", wait=False)
            clients.start()
            first_embed_s: float | None = None
            while not job.state.is_final and time.perf_counter() - started < JOB_TIMEOUT_S:
                time.sleep(0.1)
                job = reader.jobs.get_job(job.job_id)
                if first_embed_s is None and job.count(Stage.EMBED).done:
                    first_embed_s = time.perf_counter() - started
            ingest_s = time.perf_counter() - started
            clients.switch_to_after()
            clients.join()
            got = unit_texts(reader)
        round_trips = engine_round_trips(settings)
        if job.state is not JobState.SUCCEEDED or job.errors:
            raise SystemExit(f"ingest {job.state.value}: {job.reason} {job.errors[:3]}")
    finally:
        if clients is not None:
            clients.stop()
        for process in reversed(processes):
            process.stop()
        server.stop()
    vectors = open_vector_store(settings.vector_url)
    keywords = open_keyword_index(settings.keyword_url)
    try:
        counts = (vectors.count_vectors(INDEX), keywords.count_units(INDEX))
    finally:
        vectors.close()
        keywords.close()
    during, after = clients.latency_ms["during"], clients.latency_ms["after"]
    # Queries that started once units were in the engines: their searches met the
    # owner writing embed batches.
    units_from = started + (first_embed_s or ingest_s)
    with_units = [ms for ended, ms in clients.ended_during if ended - ms / 1000 >= units_from]
    return {
        "latency_ms": args.latency_ms, "query_clients": args.clients,
        "documents": sum(1 for _ in corpus.open()), "units": len(got),
        "ingest_s": round(ingest_s, 1),
        "first_units_in_engines_s": round(first_embed_s or 0.0, 1),
        "errors": len(clients.errors), "error_samples": clients.errors[:5],
        "queries_during_ingest": len(during),
        "query_p50_ms_during_ingest": round(percentile(during, 50), 1),
        "query_p95_ms_during_ingest": round(percentile(during, 95), 1),
        "queries_during_ingest_with_units_in_engines": len(with_units),
        "query_p50_ms_with_units_in_engines": round(percentile(with_units, 50), 1),
        "query_p95_ms_with_units_in_engines": round(percentile(with_units, 95), 1),
        "engine_calls_ms_per_query_p50_during_ingest": round(
            percentile(clients.engines_ms["during"], 50), 1),
        "engine_calls_ms_per_query_p95_during_ingest": round(
            percentile(clients.engines_ms["during"], 95), 1),
        "queries_after_ingest": len(after),
        "query_p50_ms_after_ingest": round(percentile(after, 50), 1),
        "query_p95_ms_after_ingest": round(percentile(after, 95), 1),
        "engine_calls_ms_per_query_p50_after_ingest": round(
            percentile(clients.engines_ms["after"], 50), 1),
        "engine_calls_ms_per_query_p95_after_ingest": round(
            percentile(clients.engines_ms["after"], 95), 1),
        "engine_call_p50_ms": round(percentile(round_trips, 50), 2),
        "engine_call_p95_ms": round(percentile(round_trips, 95), 2),
        "identical_to_eager": got == expected,
        "engine_counts": list(counts), "engines_hold_each_unit_once": counts == (
            len(expected), len(expected)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hopindex-one-machine-"))
    try:
        with running_redis("redis://127.0.0.1:1/0", database=0) as (redis_url, _):
            figures = run(args, tmp, redis_url)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    path = write_result("one-machine", figures)
    print(f"ingest of {figures['documents']} documents: {figures['ingest_s']} s, "
          f"{figures['units']} units; {figures['errors']} query errors")
    print(f"{figures['queries_during_ingest']} queries during the ingest: p50 "
          f"{figures['query_p50_ms_during_ingest']} ms, p95 "
          f"{figures['query_p95_ms_during_ingest']} ms; after it: p50 "
          f"{figures['query_p50_ms_after_ingest']} ms, p95 "
          f"{figures['query_p95_ms_after_ingest']} ms")
    print(f"{figures['queries_during_ingest_with_units_in_engines']} of them once units "
          f"were in the engines: p50 {figures['query_p50_ms_with_units_in_engines']} ms, p95 "
          f"{figures['query_p95_ms_with_units_in_engines']} ms")
    print(f"a query's two engine calls: p50 "
          f"{figures['engine_calls_ms_per_query_p50_during_ingest']} ms, p95 "
          f"{figures['engine_calls_ms_per_query_p95_during_ingest']} ms during the ingest; "
          f"p50 {figures['engine_calls_ms_per_query_p50_after_ingest']} ms, p95 "
          f"{figures['engine_calls_ms_per_query_p95_after_ingest']} ms after it")
    print(f"one engine call alone: p50 {figures['engine_call_p50_ms']} ms, p95 "
          f"{figures['engine_call_p95_ms']} ms")
    print(f"identical to the eager build: {figures['identical_to_eager']}; engines hold "
          f"each unit once: {figures['engines_hold_each_unit_once']}")
    print(f"wrote {path}")
    if figures["errors"] or not figures["identical_to_eager"] or not figures[
            "engines_hold_each_unit_once"]:
        raise SystemExit("FAILED: query errors, or the index differs from the eager build")


if __name__ == "__main__":
    main()
