"""Start Celery worker and beat processes for ``hopindex worker`` / ``hopindex beat``."""

from __future__ import annotations

import enum
import os
import socket
from collections.abc import Sequence
from urllib.parse import urlsplit

from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.core.logging import get_logger
from hopindex.core.settings import Settings
from hopindex.monitoring.multiprocess import start_worker_metrics
from hopindex.workers.app import configure_app
from hopindex.workers.queues import Queue

log = get_logger(__name__)

# Engines that allow one process at a time (DESIGN.md §4).
_SINGLE_PROCESS_SCHEMES = ("qdrant-edge", "tantivy")
MAX_PORT = 65_535


class Pool(enum.StrEnum):
    """Celery's execution pools: ``prefork`` for CPU-bound stages, ``threads`` when one
    process must own the embedded engines, ``solo`` for debugging."""

    AUTO = "auto"
    PREFORK = "prefork"
    THREADS = "threads"
    SOLO = "solo"


def parse_queues(raw: str) -> list[Queue]:
    names = [q.strip() for q in raw.split(",") if q.strip()]
    if not names:
        raise InvalidInputError("name at least one queue", where="--queues")
    known = {q.value: q for q in Queue}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InvalidInputError(f"unknown queue(s) {', '.join(unknown)}; known: "
                                f"{', '.join(known)}", where="--queues")
    return [known[n] for n in dict.fromkeys(names)]


def choose_pool(settings: Settings, queues: Sequence[Queue], pool: Pool) -> Pool:
    """``auto``: threads when this worker writes embedded engines (one process may hold
    them, so its tasks share one process), prefork otherwise."""
    if pool is not Pool.AUTO:
        if (pool is Pool.PREFORK and Queue.EMBED in queues
                and _embedded_engines(settings)):
            raise ConfigError("the embed queue writes the embedded engines, which one process "
                              "may open: use --pool threads (or auto), or server backends "
                              "(HOPINDEX_VECTOR_URL, HOPINDEX_KEYWORD_URL)")
        return pool
    return Pool.THREADS if Queue.EMBED in queues and _embedded_engines(settings) else Pool.PREFORK


def _embedded_engines(settings: Settings) -> bool:
    return any(urlsplit(url).scheme in _SINGLE_PROCESS_SCHEMES
               for url in (settings.vector_url, settings.keyword_url))


def _require_broker(settings: Settings) -> None:
    if not settings.broker_url:
        raise ConfigError("HOPINDEX_BROKER_URL is empty: workers take tasks from a broker, "
                          "e.g. redis://localhost:6379/0 (without one, tasks run inside "
                          "the command that submits them)")


def worker_argv(settings: Settings, queues: Sequence[Queue], concurrency: int, pool: Pool,
                name: str | None = None) -> list[str]:
    chosen = choose_pool(settings, queues, pool)
    node = name or f"hopindex-{os.getpid()}@{socket.gethostname()}"
    return ["worker", "--queues", ",".join(q.value for q in queues), "--pool", chosen.value,
            "--concurrency", str(concurrency), "--hostname", node,
            "--loglevel", settings.log_level.upper(), "--without-gossip", "--without-mingle"]


def run_worker(settings: Settings, queues: Sequence[Queue], concurrency: int,
               pool: Pool = Pool.AUTO, name: str | None = None, *,
               metrics_port: int | None = None, metrics_host: str = "0.0.0.0") -> None:
    """Run a worker in this process until it is stopped (SIGTERM: warm shutdown).

    With ``metrics_port``, ``http://metrics_host:metrics_port/metrics`` serves the
    metrics of the worker and all its pool processes (monitoring/multiprocess.py).
    """
    _require_broker(settings)
    if concurrency < 1:
        raise InvalidInputError(f"must be at least 1, got {concurrency}", where="--concurrency")
    if metrics_port is not None and not 0 <= metrics_port <= MAX_PORT:
        raise InvalidInputError(f"must be a TCP port (0-{MAX_PORT}), got {metrics_port}",
                                where="--metrics-port")
    # Before configure_app: multiprocess metrics must be set up before anything imports
    # prometheus_client, and the pool's children are forked after this.
    metrics = (start_worker_metrics(settings, metrics_host, metrics_port)
               if metrics_port is not None else None)
    app = configure_app(settings)
    argv = worker_argv(settings, queues, concurrency, pool, name)
    log.info("worker_starting", queues=[q.value for q in queues], pool=argv[4],
             concurrency=concurrency, metrics=metrics.url if metrics else None)
    try:
        app.worker_main(argv)
    finally:
        if metrics is not None:
            metrics.close()


def run_beat(settings: Settings) -> None:
    """Run the scheduler of periodic tasks (the reaper) until stopped."""
    _require_broker(settings)
    app = configure_app(settings)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    schedule = settings.data_dir / "celerybeat-schedule"
    log.info("beat_starting", reaper_interval_s=settings.reaper_interval_s)
    app.start(["beat", "--schedule", str(schedule), "--loglevel", settings.log_level.upper()])
