"""Horizontal scaling: an LLM-mode ingest of HotpotQA-100 on 1, 2 and 4 worker processes.

Each LLM worker takes the stage1 and stage2 queues with concurrency 4 (prefork, one
call in flight per child); one more worker owns the embedded engines (control and
embed queues). The test server answers after ``--latency-ms`` with no rate limit,
so if LLM waits set the pace, wall time halves with each doubling of workers. The
queue's own ceiling is measured by pushing no-op tasks through the same broker.

    .venv/bin/python benchmarks/distributed_ingest.py [--latency-ms 300] [--workers 1,2,4]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis
from common import ROOT, local_client, write_result

from hopindex.core.models import JobState
from hopindex.core.settings import Settings
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from hopindex.testing.redis_server import running_redis
from hopindex.testing.workers import WorkerProcess
from hopindex.workers.app import configure_app
from hopindex.workers.tasks.control import ping

SAMPLE = ROOT / "hopindex" / "sample" / "hotpotqa-100"
INDEX = "hotpot"
CONCURRENCY = 4
PING_TASKS = 2000


def settings_for(data_dir: Path, server: LlmTestServer, redis_url: str) -> Settings:
    # Embeddings come from the test server too: the benchmark measures the queue and
    # the LLM waits, not a CPU embedding model shared by every run.
    return Settings(
        data_dir=data_dir, broker_url=redis_url, state_url=redis_url,
        llm_model=server.config.model, llm_base_url=server.base_url, llm_api_key="bench",
        embedder_url=f"openai://{server.config.embedding_model}",
        llm_concurrency=1, stage1_batch_docs=8, stage2_batch_entities=16,
        log_level="WARNING").resolved()


def run(n_workers: int, server: LlmTestServer, redis_url: str, tmp: Path) -> dict[str, object]:
    redis.Redis.from_url(redis_url).flushdb()
    data_dir = tmp / f"data-{n_workers}"
    settings = settings_for(data_dir, server, redis_url)
    workers = [WorkerProcess(settings, ["control", "embed"], concurrency=CONCURRENCY,
                             name="engines", log_path=tmp / f"engines-{n_workers}.log")]
    workers += [WorkerProcess(settings, ["stage1", "stage2"], concurrency=CONCURRENCY,
                              pool="prefork", name=f"llm{i}",
                              log_path=tmp / f"llm{i}-{n_workers}.log")
                for i in range(n_workers)]
    try:
        for worker in workers:
            worker.wait_ready()
        calls_before = server.stats.count(Endpoint.CHAT)
        with local_client(settings=settings) as client:
            started = time.perf_counter()
            # The job runs on the workers; a waiting ingest returns once it ends, so
            # wall_s covers the whole job.
            job = client.ingest(INDEX, [SAMPLE / "corpus.json"])
            wall_s = time.perf_counter() - started
        if job.state is not JobState.SUCCEEDED:
            raise SystemExit(f"{n_workers} workers: job {job.state.value}: {job.reason}")
        calls = server.stats.count(Endpoint.CHAT) - calls_before
        tasks = len([k for k in job.settled if k.startswith("task:")])
        return {"workers": n_workers, "wall_s": round(wall_s, 1), "llm_calls": calls,
                "tasks": tasks, "tasks_per_s": round(tasks / wall_s, 1),
                "llm_calls_per_s": round(calls / wall_s, 1)}
    finally:
        for worker in workers:
            worker.stop()


def queue_ceiling(redis_url: str, tmp: Path, n_workers: int) -> float:
    """No-op tasks per second through the broker with ``n_workers`` workers of CONCURRENCY each."""
    redis.Redis.from_url(redis_url).flushdb()
    settings = Settings(data_dir=tmp / "ping", broker_url=redis_url,
                        state_url=redis_url).resolved()
    configure_app(settings)
    workers = [WorkerProcess(settings, ["control"], concurrency=CONCURRENCY, pool="prefork",
                             name=f"ping{i}", log_path=tmp / f"ping{i}.log")
               for i in range(n_workers)]
    try:
        for worker in workers:
            worker.wait_ready()
        started = time.perf_counter()
        results = [ping.apply_async((i,)) for i in range(PING_TASKS)]
        for result in results:
            result.get(timeout=300)
        return PING_TASKS / (time.perf_counter() - started)
    finally:
        for worker in workers:
            worker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=300.0)
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="hopindex-dist-"))
    server = LlmTestServer(LlmServerConfig(latency_s=args.latency_ms / 1000)).start_in_thread()
    try:
        with running_redis("redis://127.0.0.1:1/0", database=0) as (redis_url, _):
            runs = [run(n, server, redis_url, tmp) for n in counts]
            ceiling = queue_ceiling(redis_url, tmp, max(counts))
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    base = runs[0]["wall_s"]
    for r in runs:
        r["speedup"] = round(float(base) / float(r["wall_s"]), 2)  # type: ignore[arg-type]
    figures = {"latency_ms": args.latency_ms, "concurrency_per_worker": CONCURRENCY,
               "runs": runs, "queue_ceiling_tasks_per_s": round(ceiling, 1)}
    path = write_result("distributed-ingest", figures)
    for r in runs:
        print(f"{r['workers']} LLM workers: {r['wall_s']} s, speed-up {r['speedup']}x, "
              f"{r['tasks_per_s']} tasks/s, {r['llm_calls_per_s']} LLM calls/s")
    print(f"queue ceiling: {ceiling:.0f} no-op tasks/s with {max(counts)} workers x "
          f"{CONCURRENCY}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
