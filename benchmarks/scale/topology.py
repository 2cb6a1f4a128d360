"""The processes a scale run starts: a private Redis (broker, state, events), the
embedding server, and one worker process per queue, as docker-compose runs them.

- ``control`` (prefork, 1): the chord callbacks that plan each step;
- ``embed`` (threads, 1): owns the embedded engines (Qdrant Edge, tantivy) and takes
  the engine queue besides, so every other process's engine calls travel to it. One
  thread: with two, the first two tasks of a fresh worker each open a runtime of their
  own (``workers/runtime.current_runtime`` checks and sets without a lock), so two
  Qdrant Edge stores open one shard and the second fails with ``Can't init WAL:
  WouldBlock``, failing the job; distributed_ingest.py escapes it because its engine
  worker's first task is a lone control callback;
- ``stage1`` and ``stage2`` (prefork, 2 each: the machine's 2 cores; the two stages
  never run at once, since phases are barriers).

Embeddings come from the test server's ``/embeddings`` (hashed vectors, no model) in a
process of its own, so neither a CPU model nor the server's work in the harness's
process sets the figures: the runtime does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from task_log import ENV as TASK_LOG_ENV

from hopindex.core.settings import LogFormat, LogLevel, Settings
from hopindex.testing.llm_limits import LlmServerConfig
from hopindex.testing.workers import WorkerProcess

HOOK = Path(__file__).resolve().parent / "hook"
# (name, queues, pool, concurrency)
WORKERS = (
    ("control", ["control"], "prefork", 1),
    ("embed", ["embed"], "threads", 1),
    ("stage1", ["stage1"], "prefork", 2),
    ("stage2", ["stage2"], "prefork", 2),
)


def settings_for(data_dir: Path, redis_url: str, embedding_url: str) -> Settings:
    # No LLM model: the default index method is the LLM-free one. The LLM base URL
    # only points the openai:// embedder at the test server.
    return Settings(
        data_dir=data_dir, broker_url=redis_url, state_url=redis_url,
        llm_base_url=embedding_url, llm_api_key="bench",
        embedder_url=f"openai://{LlmServerConfig().embedding_model}",
        log_format=LogFormat.JSON, log_level=LogLevel.WARNING).resolved()


@contextmanager
def embedding_server(log_path: Path) -> Iterator[str]:
    """The test server in a process of its own; yields its base URL."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "hopindex.testing.llm_server", "--port", "0",
             "--log-level", "WARNING"], stdout=subprocess.PIPE, stderr=log)
        try:
            assert process.stdout is not None  # stdout=PIPE
            url = process.stdout.readline().decode().strip()
            if not url.startswith("http"):
                raise SystemExit(f"the embedding server did not start; see {log_path}")
            yield url
        finally:
            process.terminate()
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
            if process.poll() is None:
                process.kill()
                process.wait()


@contextmanager
def task_log_in_children(redis_url: str) -> Iterator[None]:
    """Processes started inside load task_log through ``hook/sitecustomize.py``."""
    saved = {key: os.environ.get(key) for key in ("PYTHONPATH", TASK_LOG_ENV)}
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(HOOK), *([saved["PYTHONPATH"]] if saved["PYTHONPATH"] else [])])
    os.environ[TASK_LOG_ENV] = redis_url
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def workers(settings: Settings, logs: Path) -> Iterator[dict[str, WorkerProcess]]:
    """One worker per queue, started together and ready; stopped on exit."""
    started: dict[str, WorkerProcess] = {}
    try:
        for name, queues, pool, concurrency in WORKERS:
            started[name] = WorkerProcess(settings, queues, concurrency=concurrency,
                                          pool=pool, name=name,
                                          log_path=logs / f"{name}.log")
        for worker in started.values():
            worker.wait_ready()
        yield started
    finally:
        for worker in started.values():
            worker.stop()
