"""``--phases-only``: what grows with the corpus, without the two costs that only grow
linearly and dominate a full ingest on 2 cores (spaCy over every text, the embed step).

The job is submitted for real (reading, validation, document writes, the first
step's planning and fan-out, all in this process, as ``hopindex ingest`` does with a
broker) and then driven here, step by step, from its own fan-out records: each
recorded task's body runs in this process with the arguments its message carries,
and each recorded callback's body with the tasks' results, exactly as a worker
would run them, so every step is planned, recorded and sent by the scheduler's own
code. Nothing consumes the queues, so every message sent stays in Redis to be
measured as stored (the ``wire`` estimate of task_log.py is checked against it).

What differs from a full run, and is stated in the JSON:

- NLP: pattern_nlp.py in place of spaCy (same sentences and names on this corpus);
- the embed and purge tasks are sent and recorded, not run (no engine holds vectors);
- tasks run one after another in one process: ``work_s`` is their serial time;
- chord callbacks are run here, not sent: the messages counted are the fan-outs'.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
import redis_memory
import task_log
import timeline
import topology
from common import high_water_mb, local_client
from job_record import job_figures, jobs_cli
from pattern_nlp import PatternNlp
from procs import Sampler
from watch import STATE_PREFIX, fanout_of

from hopindex.backends.registry import Backends
from hopindex.core.ids import job_id as new_job_id
from hopindex.methods.registry import default_index_method
from hopindex.scheduler.runtime import Runtime
from hopindex.scheduler.task_names import EMBED, PURGE
from hopindex.workers.app import app
from hopindex.workers.runtime import bind_runtime

INDEX = "scale"
# Written into the JSON beside the figures, as the docstring says.
DIFFERS_FROM_FULL = (
    "NLP: pattern_nlp.py in place of spaCy (same sentences and names on this corpus)",
    "the embed and purge tasks are sent and recorded, not run (no engine holds vectors)",
    "tasks run one after another in one process: work_s is their serial time",
    "chord callbacks are run here, not sent: the messages counted are the fan-outs'",
)
NOT_RUN = frozenset({EMBED, PURGE})
QUEUES = ("stage1", "stage2", "embed", "control")
# Never called: no embed task runs. Settings want a URL for the openai:// embedder.
NO_EMBEDDINGS = "http://127.0.0.1:9/v1"


def _body(name: str) -> Callable[..., Any]:
    """The function a task of ``name`` runs (Celery's ``run``), without Celery."""
    task = app.tasks[name]
    run: Callable[..., Any] = task.run
    return run


def drive(raw: redis.Redis, job_id: str, before_finalize: Callable[[], None],
          limit: int | None = None) -> list[dict[str, Any]]:
    """Run the job's fan-outs in the order they are recorded until it ends, or until
    ``limit`` of them ran (0: only what the submit planned and sent)."""
    key = f"{STATE_PREFIX}:dispatch:{job_id}"
    steps: list[dict[str, Any]] = []
    while limit is None or len(steps) < limit:
        raw_record = raw.lindex(key, len(steps))
        if not isinstance(raw_record, bytes):  # no further fan-out: the job ended
            return steps
        record = json.loads(raw_record)
        if record["phase"] == "finalize-send":
            before_finalize()
        started = time.perf_counter()
        results = [_body(t["task"])(*t["args"], **t.get("kwargs", {}))
                   for t in record["tasks"] if t["task"] not in NOT_RUN]
        work_s = time.perf_counter() - started
        callback = record["callback"]
        args = callback["args"] if callback.get("immutable") else [results, *callback["args"]]
        started = time.perf_counter()
        _body(callback["task"])(*args, **callback.get("kwargs", {}))
        steps.append({"step": record["phase"], **fanout_of(raw_record).as_dict(),
                      "tasks_run": len(results), "work_s": round(work_s, 3),
                      "callback": str(callback["task"]).removeprefix(timeline.CONTROL_PREFIX),
                      "callback_s": round(time.perf_counter() - started, 3)})
    # Stopped early: the last fan-out still planned is measured as recorded, unrun.
    planned = raw.lindex(key, len(steps))
    if isinstance(planned, bytes):
        steps.append({"step": json.loads(planned)["phase"], **fanout_of(planned).as_dict(),
                      "tasks_run": 0})
    return steps


def queued_sizes(raw: redis.Redis) -> dict[str, int]:
    """Task id → bytes of each message waiting in the queues, as Redis holds it."""
    sizes: dict[str, int] = {}
    for queue in QUEUES:
        for message in raw.lrange(queue, 0, -1):
            sizes[json.loads(message)["headers"]["id"]] = len(message)
    return sizes


def wire_check(messages: list[dict[str, Any]], stored: dict[str, int]) -> dict[str, Any]:
    """task_log's ``wire`` estimate against the stored messages."""
    errors = [m["wire"] - stored[m["id"]] for m in messages if m["id"] in stored]
    return {"messages_compared": len(errors),
            "estimate_minus_stored_bytes_max_abs": max(map(abs, errors), default=0),
            "estimate_minus_stored_bytes_mean": round(sum(errors) / len(errors), 1)
            if errors else 0}


def phases_only(size: int, corpus: Path, tmp: Path, redis_url: str,
                steps_limit: int | None = None) -> dict[str, Any]:
    raw = redis.Redis.from_url(redis_url)
    raw.flushall()
    task_log.install(redis_url)
    settings = topology.settings_for(tmp / "data", redis_url, NO_EMBEDDINGS)
    figures: dict[str, Any] = {"differs_from_full": list(DIFFERS_FROM_FULL)}
    snapshot: dict[str, Any] = {}

    def before_finalize() -> None:
        # Every step planned and recorded, the job's scope kept: the moment Redis holds
        # the most that is the job's alone (finalize clears it).
        families = redis_memory.by_family(raw)
        snapshot["redis_memory_before_finalize"] = redis_memory.per_document(families, size)
        stored = raw.hget(f"{STATE_PREFIX}:job:{job_id}", "data")
        snapshot["job_record_bytes_before_finalize"] = len(stored or b"")

    with local_client(settings=settings) as client, \
            Sampler({}, {"harness": os.getpid()}) as rss:
        job_id = new_job_id()
        started = time.perf_counter()
        read = client.read_source([corpus])
        read_s = time.perf_counter() - started
        client.ingest_read(INDEX, read, method=default_index_method(False), wait=False,
                           job_id=job_id)
        submit_s = time.perf_counter() - started - read_s
        del read
        # The tasks' runtime: this process's, with the pattern NLP handed in.
        bind_runtime(Runtime(settings=settings, backends=Backends(settings, nlp=PatternNlp()),
                             app=app))
        steps = drive(raw, job_id, before_finalize, steps_limit)
        job = client.jobs.get_job(job_id)
        messages = [m for m in task_log.read(raw, task_log.PUBLISHED) if m["job"] == job_id]
        figures |= {
            "read_s": round(read_s, 2), "submit_s": round(submit_s, 2),
            "job": job_figures(job, raw), "steps": steps, **snapshot,
            "broker": {"job_messages": len(messages),
                       "job_wire_bytes": sum(m["wire"] for m in messages),
                       "by_task": timeline.by_task(messages),
                       "wire_check": wire_check(messages, queued_sizes(raw))},
            "redis_memory": redis_memory.per_document(redis_memory.by_family(raw), size),
            "jobs_cli": jobs_cli(settings, job_id)}
    figures["rss"] = rss.as_dict()
    figures["harness_vmhwm_mb"] = round(high_water_mb(), 1)
    return figures
