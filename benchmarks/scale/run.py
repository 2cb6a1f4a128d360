"""The runtime at scale: a synthetic corpus of SIZE documents ingested by real worker
processes on Redis with the LLM-free default method, and what grows with it.

    .venv/bin/python benchmarks/scale/run.py --size 10000 [--phases-only] [--queries 50]
    make bench-scale SIZE=10000

Measured (each figure's source is in its module's docstring, and stated in the JSON):

- wall time per step and the planning callback of each (timeline.py);
- broker bytes per message, per task name and per job (task_log.py), with Redis's own
  network counters beside them;
- Redis memory per document by key family after the job (redis_memory.py), and the
  peak of ``used_memory`` while it ran (watch.py);
- the fan-out records and the job record at their peak (watch.py), the job record at
  the end, and the output of ``hopindex jobs JOB_ID`` (as the CLI prints it);
- peak RSS of each worker's process tree and of this process (procs.py);
- query latency, p50 and p95, of two-hop questions through the local client.

``--phases-only`` measures the parts that scale with the corpus without spaCy or the
embed step (phases.py). Results: benchmarks/out/scale-SIZE.json (or
scale-SIZE-phases.json); ``fit.py`` fits them to the size. Type-checked with
``MYPYPATH=benchmarks .venv/bin/mypy benchmarks/scale`` (common.py is one folder up).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis
import redis_memory
import task_log
import timeline
import topology
from common import OUT, high_water_mb, local_client, write_result
from corpus import Corpus, describe
from job_record import code_version, job_figures, jobs_cli
from procs import Sampler
from watch import JobWatch

from hopindex.api.client.local import LocalClient
from hopindex.core.ids import job_id as new_job_id
from hopindex.core.models import JobState
from hopindex.methods.registry import default_index_method
from hopindex.scheduler.task_names import FINALIZE
from hopindex.testing.redis_server import running_redis

INDEX = "scale"
# Port 1 never answers: a private redis-server is started, flushed by nobody else.
PRIVATE_REDIS = "redis://127.0.0.1:1/0"
CORPUS_DIR = OUT / "scale"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_queries(client: LocalClient, questions: list[dict[str, Any]]) -> dict[str, Any]:
    """Each question once after one warm-up query (connections, the engine owner's
    first search); latency is the query's own ``latency_s``, wall the call's."""
    client.query(INDEX, questions[0]["question"])
    latencies, walls, found = [], [], 0
    for q in questions:
        started = time.perf_counter()
        result = client.query(INDEX, q["question"], k=10)
        walls.append(time.perf_counter() - started)
        latencies.append(result.latency_s)
        titles = {p.title for p in result.passages}
        found += all(t in titles for t in q["supporting_titles"])
    return {"queries": len(questions), "method": result.method,
            "p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
            "p95_ms": round(percentile(latencies, 0.95) * 1000, 1),
            "wall_p50_ms": round(percentile(walls, 0.5) * 1000, 1),
            "wall_p95_ms": round(percentile(walls, 0.95) * 1000, 1),
            "both_supporting_in_top10": round(found / len(questions), 3)}


def full_run(size: int, corpus: Path, questions: list[dict[str, Any]], tmp: Path,
             redis_url: str) -> dict[str, Any]:
    raw = redis.Redis.from_url(redis_url)
    raw.flushall()
    task_log.install(redis_url)
    with topology.embedding_server(tmp / "embedding-server.log") as embedding_url:
        settings = topology.settings_for(tmp / "data", redis_url, embedding_url)
        with topology.task_log_in_children(redis_url), \
                topology.workers(settings, tmp) as workers, \
                local_client(settings=settings) as client:
            task_log.clear(raw)
            baseline_memory = redis_memory.used_memory(raw)["used_memory"]
            net_before = redis_memory.net_stats(raw)
            job_id = new_job_id()
            pids = {name: w.process.pid for name, w in workers.items()}
            with Sampler(pids, {"harness": os.getpid()}) as rss, \
                    JobWatch(raw, job_id) as watch:
                started = time.perf_counter()
                read = client.read_source([corpus])
                read_s = time.perf_counter() - started
                job = client.ingest_read(INDEX, read, method=default_index_method(False),
                                         wait=False, job_id=job_id)
                submit_s = time.perf_counter() - started - read_s
                del read
                job = client.jobs.wait_for_job(job_id)
                ingest_s = time.perf_counter() - started
            if job.state is not JobState.SUCCEEDED:
                raise SystemExit(f"job {job_id} {job.state.value}: {job.reason}")
            net_after = redis_memory.net_stats(raw)
            figures: dict[str, Any] = {
                "job": job_figures(job, raw),
                "ingest_wall_s": round(ingest_s, 2), "read_s": round(read_s, 2),
                "submit_s": round(submit_s, 2)}
            # The job reads succeeded inside its finalize task, before that run is logged.
            runs = task_log.wait_for_run(raw, FINALIZE, job_id)
            messages = task_log.read(raw, task_log.PUBLISHED)
            mine = [m for m in messages if m["job"] == job_id]
            starts = timeline.step_starts(client.events.iterate_events(INDEX), job_id)
            planned = timeline.planned_phases([w.log_path for w in workers.values()], job_id)
            figures["steps"] = timeline.relative(
                timeline.steps(starts, job.finished_at or time.time(), runs, mine, planned),
                job.created_at)
            figures["broker"] = {
                "method": "Celery before_task_publish in every process (task_log.py): JSON "
                          "body and headers as kombu serialises them, and the Redis "
                          "transport's envelope (body base64)",
                "job_messages": len(mine), "job_wire_bytes": sum(m["wire"] for m in mine),
                "wire_bytes_per_message": round(sum(m["wire"] for m in mine) / len(mine), 1),
                "by_task": timeline.by_task(mine),
                "other_messages": len(messages) - len(mine),
                "redis_net_input_bytes": net_after["net_input_bytes"]
                - net_before["net_input_bytes"],
                "redis_commands": net_after["commands"] - net_before["commands"]}
            figures["watch"] = watch.as_dict()
            families = redis_memory.by_family(raw)
            memory = redis_memory.used_memory(raw)
            figures["redis_memory"] = {
                **redis_memory.per_document(families, size),
                "used_memory_delta_per_document": round(
                    (memory["used_memory"] - baseline_memory) / size, 1),
                "used_memory_peak_delta_per_document": round(
                    (watch.used_memory_peak - baseline_memory) / size, 1)}
            figures["jobs_cli"] = jobs_cli(settings, job_id)
            figures["queries"] = run_queries(client, questions)
            figures["rss"] = rss.as_dict()
    figures["harness_vmhwm_mb"] = round(high_water_mb(), 1)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--phases-only", action="store_true",
                        help="measure what scales with the corpus without running its tasks")
    parser.add_argument("--steps", type=int, default=None,
                        help="with --phases-only: run only the first STEPS recorded fan-outs "
                             "(0: the submit, its documents and stage 1's plan and records)")
    parser.add_argument("--redis", default=PRIVATE_REDIS,
                        help="a Redis to use (flushed!); default: a private redis-server")
    args = parser.parse_args()
    version = code_version()
    started = time.perf_counter()
    corpus_path, questions_path = Corpus(args.size).write(CORPUS_DIR, args.queries)
    generation = {"seconds": round(time.perf_counter() - started, 2), **describe(corpus_path)}
    questions = json.loads(questions_path.read_text())
    tmp = Path(tempfile.mkdtemp(prefix="hopindex-scale-"))
    try:
        with running_redis(args.redis, database=0) as (redis_url, _):
            if args.phases_only:
                from phases import phases_only

                figures = phases_only(args.size, corpus_path, tmp, redis_url, args.steps)
            else:
                figures = full_run(args.size, corpus_path, questions, tmp, redis_url)
    except BaseException:
        print(f"worker logs kept in {tmp}", file=sys.stderr)
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    name = f"scale-{args.size}" + ("-phases" if args.phases_only else "") + (
        f"-{args.steps}steps" if args.phases_only and args.steps is not None else "")
    figures = {"size": args.size, "mode": "phases-only" if args.phases_only else "full",
               "steps_run": args.steps if args.phases_only else None,
               "code": version, "corpus": generation, **figures,
               "run_wall_s": round(time.perf_counter() - started, 1)}
    path = write_result(name, figures)
    print(f"size {args.size} ({figures['mode']}): {figures['run_wall_s']} s in all; wrote {path}")


if __name__ == "__main__":
    main()
