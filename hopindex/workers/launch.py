"""Start Celery worker and beat processes for ``hopindex worker`` / ``hopindex beat``."""

from __future__ import annotations

import enum
import os
import socket
from collections.abc import Sequence

from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.core.logging import get_logger
from hopindex.core.settings import LogFormat, Settings
from hopindex.monitoring.multiprocess import start_worker_metrics
from hopindex.workers.app import configure_app
from hopindex.workers.engine_route import claim_engines, owns_engines, worker_queues
from hopindex.workers.queues import Queue

log = get_logger(__name__)

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
        if pool is Pool.PREFORK and owns_engines(settings, queues):
            raise ConfigError("the embed queue writes the embedded engines, which one process "
                              "may open: use --pool threads (or auto), or server backends "
                              "(HOPINDEX_VECTOR_URL, HOPINDEX_KEYWORD_URL)")
        return pool
    return Pool.THREADS if owns_engines(settings, queues) else Pool.PREFORK


def _require_broker(settings: Settings) -> None:
    if not settings.broker_url:
        raise ConfigError("HOPINDEX_BROKER_URL is empty: workers take tasks from a broker, "
                          "e.g. redis://localhost:6379/0 (without one, tasks run inside "
                          "the command that submits them)")


def worker_argv(settings: Settings, queues: Sequence[Queue], concurrency: int, pool: Pool,
                name: str | None = None) -> list[str]:
    chosen = choose_pool(settings, queues, pool)
    node = name or f"hopindex-{os.getpid()}@{socket.gethostname()}"
    argv = [*_celery_options(settings), "worker",
            "--queues", ",".join(worker_queues(settings, queues)), "--pool", chosen.value,
            "--concurrency", str(concurrency), "--hostname", node,
            "--loglevel", settings.log_level.upper(), "--without-gossip", "--without-mingle"]
    if owns_engines(settings, queues):
        # One message per thread: an engine call never waits behind embed batches this
        # worker reserved but has no thread for.
        argv += ["--prefetch-multiplier", "1"]
    return argv


def run_worker(settings: Settings, queues: Sequence[Queue], concurrency: int,
               pool: Pool = Pool.AUTO, name: str | None = None, *,
               metrics_port: int | None = None, metrics_host: str = "127.0.0.1") -> None:
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
    # Claimed before any task runs, and held until the worker exits: a second owner is
    # refused at start (naming this one), not at its first write.
    try:
        claims = claim_engines(settings) if owns_engines(settings, queues) else []
    except BaseException:
        if metrics is not None:
            metrics.close()
        raise
    log.info("worker_starting", queues=argv[argv.index("--queues") + 1].split(","),
             pool=argv[argv.index("--pool") + 1], concurrency=concurrency,
             engine_owner=bool(claims), metrics=metrics.url if metrics else None)
    try:
        app.worker_main(argv)
    finally:
        for claim in claims:
            claim.release()
        if metrics is not None:
            metrics.close()


def run_beat(settings: Settings) -> None:
    """Run the scheduler of periodic tasks (the reaper) until stopped."""
    _require_broker(settings)
    app = configure_app(settings)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    schedule = settings.data_dir / "celerybeat-schedule"
    log.info("beat_starting", reaper_interval_s=settings.reaper_interval_s)
    app.start([*_celery_options(settings), "beat", "--schedule", str(schedule),
               "--loglevel", settings.log_level.upper()])


def _celery_options(settings: Settings) -> list[str]:
    """Celery's options before the command: in JSON, no start-up banner (several lines
    of plain text, which a log collector would take for one record each)."""
    return ["--quiet"] if settings.log_format is LogFormat.JSON else []
