"""A worker's metrics across its processes: prometheus_client's multiprocess mode.

Celery's prefork pool runs tasks in child processes, each with its own memory, so
each writes its metric values to memory-mapped files in one directory and the
worker's ``--metrics-port`` endpoint sums them. prometheus_client picks that mode
when it is first imported, from ``PROMETHEUS_MULTIPROC_DIR``, so
:func:`start_worker_metrics` sets it before anything imports the client. The
directory is emptied at start (values of an earlier run would be added in), and a
child that exits is marked dead (``worker_process_shutdown``) so its live gauges
(tasks in progress) stop counting. Nothing here imports prometheus_client at module
level.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from celery import signals

from hopindex.core.errors import ConfigError
from hopindex.core.logging import get_logger
from hopindex.core.settings import MetricsMode, Settings
from hopindex.monitoring.multiprocess_mode import MULTIPROC_ENV, in_multiprocess_mode

if TYPE_CHECKING:
    from hopindex.monitoring.exposition import MetricsServer

log = get_logger(__name__)


def prepare_multiprocess(settings: Settings) -> Path:
    """Point prometheus_client at an empty directory for this worker's processes.

    ``HOPINDEX_METRICS_DIR`` names it (one per worker: it is emptied here), else a
    fresh temporary directory is made and removed when the worker exits.
    """
    if "prometheus_client" in sys.modules and not in_multiprocess_mode():
        # Too late: metrics made from here on would stay in this process's memory, and
        # the prefork children's values would never reach the endpoint.
        raise ConfigError("prometheus_client was imported before the worker's multiprocess "
                          "metrics directory was set up")
    if settings.metrics_dir:
        path = Path(settings.metrics_dir)
        try:
            path.mkdir(parents=True, exist_ok=True)
            for stale in path.glob("*.db"):
                stale.unlink()
        except OSError as exc:
            raise ConfigError(f"HOPINDEX_METRICS_DIR {path}: cannot prepare it: {exc}") from exc
    else:
        path = Path(tempfile.mkdtemp(prefix="hopindex-metrics-"))
        atexit.register(_remove_if_owner, path, os.getpid())
    os.environ[MULTIPROC_ENV] = str(path)
    signals.worker_process_shutdown.connect(_mark_process_dead, weak=False,
                                            dispatch_uid="hopindex.monitoring.process_dead")
    log.info("metrics_multiprocess_dir", path=str(path))
    return path


def start_worker_metrics(settings: Settings, host: str, port: int) -> MetricsServer:
    """Multiprocess mode, then ``http://host:port/metrics`` serving every process of
    this worker plus (from one process cluster-wide) the Redis gauges."""
    if settings.metrics is MetricsMode.OFF:
        raise ConfigError("--metrics-port needs metrics on (HOPINDEX_METRICS=on)")
    prepare_multiprocess(settings)
    from hopindex.monitoring.exposition import (
        multiprocess_registry,
        register_state_collector,
        serve_metrics,
    )

    registry = multiprocess_registry()
    state = register_state_collector(settings, registry)
    server = serve_metrics(host, port, registry)
    server.state = state
    log.info("metrics_serving", url=server.url)
    return server


def _mark_process_dead(*, pid: int | None = None, **_: Any) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid or os.getpid())  # type: ignore[no-untyped-call]  # unannotated upstream


def _remove_if_owner(path: Path, owner_pid: int) -> None:
    # Forked children inherit atexit handlers: only the worker that made it removes it.
    if os.getpid() == owner_pid:
        shutil.rmtree(path, ignore_errors=True)
