"""What every process of the benchmark publishes and runs, logged to Redis.

Celery workers are separate processes, and the messages of a job are sent by three of
them (the submitting process sends the first fan-out, the control worker every later
one, a query's process its engine calls), so the bytes a job puts on the broker can
only be counted where each message is sent. Celery's ``before_task_publish`` signal
fires in the sending process with the message's body and headers just before kombu
serialises them; ``task_prerun`` / ``task_postrun`` bracket each task run. Each
process appends one JSON record per event to a Redis list the harness reads after
the job.

The worker processes load this module through ``hook/sitecustomize.py``: the harness
puts ``hook/`` on their ``PYTHONPATH`` (WorkerProcess passes the harness's environment
on), so the product needs no hook of its own. The records go to lists under
``hopindex-bench:``, which the memory figures leave out.

Bytes of a message, as the Redis transport stores it (one ``LPUSH`` of a JSON
envelope): ``body`` is the task's JSON payload (args, kwargs, and Celery's ``embed``:
the chord and its callback, for a chord's header tasks), ``headers`` the JSON of
Celery's message headers (task name, id, ``argsrepr``, trace context, ...), and
``wire`` the whole envelope: the body base64-encoded (4/3 of its bytes), the headers
and kombu's properties, measured against the queued messages themselves (run.py's
``--check-wire``).
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import redis

# The Redis URL the hook writes to; a HOPINDEX_BENCH_ variable, which Settings ignores.
ENV = "HOPINDEX_BENCH_TASK_LOG"
PUBLISHED = "hopindex-bench:published"
RAN = "hopindex-bench:ran"
PREFIX = "hopindex-bench:"

_state = threading.local()
_client: dict[str, redis.Redis] = {}
_started: dict[str, float] = {}


def _redis(url: str) -> redis.Redis:
    # redis-py's pool notices a fork and reconnects, so a prefork child may share it.
    client = _client.get(url)
    if client is None:
        client = _client[url] = redis.Redis.from_url(url)
    return client


def wire_bytes(body: object, headers: dict[str, Any], properties: dict[str, Any],
               exchange: str, routing_key: str) -> tuple[int, int, int]:
    """(body, headers, envelope) bytes of the message kombu's Redis transport stores."""
    from kombu.utils import json as kombu_json

    # kombu's own JSON encoder (UUIDs, dates), as its producer serialises a message.
    dumps: Callable[[object], str] = kombu_json.dumps
    payload = dumps(body).encode("utf-8")
    envelope = {
        "body": base64.b64encode(payload).decode("ascii"),
        "content-encoding": "utf-8", "content-type": "application/json",
        "headers": headers,
        "properties": {**properties, "delivery_mode": 2,
                       "delivery_info": {"exchange": exchange, "routing_key": routing_key},
                       "priority": 0, "body_encoding": "base64",
                       "delivery_tag": "00000000-0000-0000-0000-000000000000"}}
    return (len(payload), len(dumps(headers).encode("utf-8")),
            len(dumps(envelope).encode("utf-8")))


def _first_arg(body: object) -> str:
    # Every job task's first argument is its job id (scheduler/task_names.py).
    if isinstance(body, tuple | list) and body and isinstance(body[0], list | tuple) and body[0]:
        first = body[0][0]
        if isinstance(first, str) and len(first) <= 64:
            return first
    return ""


def install(url: str) -> None:
    """Log every publish and task run of this process to the Redis at ``url``."""
    from celery import signals

    def published(sender: str | None = None, body: object = None,
                  headers: dict[str, Any] | None = None,
                  properties: dict[str, Any] | None = None, exchange: str = "",
                  routing_key: str = "", **_: Any) -> None:
        body_b, headers_b, wire = wire_bytes(body, headers or {}, properties or {},
                                             exchange or "", routing_key or "")
        record = {"task": sender, "id": (headers or {}).get("id", ""),
                  "queue": routing_key, "body": body_b,
                  "headers": headers_b, "wire": wire, "job": _first_arg(body),
                  "pid": os.getpid(), "at": time.time()}
        _redis(url).rpush(PUBLISHED, json.dumps(record))

    def prerun(task_id: str = "", **_: Any) -> None:
        _started[task_id] = time.time()

    def postrun(task_id: str = "", task: Any = None, args: Any = None, **_: Any) -> None:
        start = _started.pop(task_id, None)
        if start is None:
            return
        job = args[0] if args and isinstance(args[0], str) and len(args[0]) <= 64 else ""
        record = {"task": getattr(task, "name", "?"), "start": start, "end": time.time(),
                  "job": job, "pid": os.getpid()}
        _redis(url).rpush(RAN, json.dumps(record))

    uid = "benchmarks.scale.task_log."
    signals.before_task_publish.connect(published, weak=False, dispatch_uid=uid + "publish")
    signals.task_prerun.connect(prerun, weak=False, dispatch_uid=uid + "prerun")
    signals.task_postrun.connect(postrun, weak=False, dispatch_uid=uid + "postrun")


def install_from_env() -> None:
    url = os.environ.get(ENV, "")
    if url:
        install(url)


def read(client: redis.Redis, key: str) -> list[dict[str, Any]]:
    """Every record of ``key`` (PUBLISHED or RAN), oldest first."""
    return [json.loads(raw) for raw in client.lrange(key, 0, -1)]


def wait_for_run(client: redis.Redis, task: str, job: str, timeout_s: float = 10.0
                 ) -> list[dict[str, Any]]:
    """The RAN records once one of ``task`` for ``job`` is among them (or at the timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        runs = read(client, RAN)
        if any(r["task"] == task and r["job"] == job for r in runs) \
                or time.monotonic() > deadline:
            return runs
        time.sleep(0.05)


def clear(client: redis.Redis) -> None:
    client.delete(PUBLISHED, RAN)
