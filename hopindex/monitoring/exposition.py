"""Serving metrics: the body of one scrape, and a small HTTP server for a process with
no web server of its own (a worker's ``--metrics-port``).

The HTTP API's ``/metrics`` route answers with :func:`render_metrics`; at start-up
it calls :func:`register_state_collector` so the Redis gauges (queue depth, jobs,
units) can be exported from it too (one process at a time, see ``collector.py``).

Both endpoints negotiate the format the same way, with prometheus_client's own
chooser: an ``Accept`` naming ``application/openmetrics-text`` gets OpenMetrics
(ending in ``# EOF``), anything else the Prometheus text format.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector

from hopindex.core.errors import ConfigError
from hopindex.core.settings import Settings
from hopindex.monitoring import metrics as _metrics
from hopindex.monitoring.collector import StateCollector
from hopindex.monitoring.multiprocess_mode import in_multiprocess_mode
from hopindex.monitoring.process_tree import ProcessTreeCollector

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

_lock = threading.Lock()
_multiprocess_registry: CollectorRegistry | None = None
# The state collector registered in each registry (by id), replaced on re-registration.
_state_collectors: dict[int, StateCollector] = {}


def multiprocess_registry() -> CollectorRegistry:
    """A registry summing the files of every process of this worker (multiprocess mode),
    with ``process_*`` for the tree of processes under the one that made it (the serving
    process; prometheus_client's ProcessCollector has no place in this mode)."""
    global _multiprocess_registry  # noqa: PLW0603  # one aggregate view per process
    with _lock:
        if _multiprocess_registry is None:
            registry = CollectorRegistry()
            MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # unannotated upstream
            registry.register(ProcessTreeCollector())
            _multiprocess_registry = registry
        return _multiprocess_registry


def process_registry() -> CollectorRegistry:
    """What this process serves: every process's files in multiprocess mode, else the
    default registry."""
    return multiprocess_registry() if in_multiprocess_mode() else REGISTRY


def render_metrics(registry: CollectorRegistry | None = None, accept: str = ""
                   ) -> tuple[bytes, str]:
    """The exposition of ``registry`` (default: this process's) in the format the
    request's ``accept`` header asks for, and its content type: what a ``/metrics``
    route answers."""
    encode, content_type = choose_encoder(accept)
    return encode(registry or process_registry()), content_type


def register_state_collector(settings: Settings, registry: CollectorRegistry | None = None
                             ) -> StateCollector | None:
    """Add the Redis gauges for ``settings`` to ``registry`` (default: this process's);
    None when neither the broker nor the state is on Redis. Registering again replaces
    the earlier collector."""
    target = registry or process_registry()
    collector = StateCollector(settings)
    with _lock:
        previous = _state_collectors.pop(id(target), None)
        if previous is not None:
            target.unregister(previous)
            previous.close()
        if not collector.enabled:
            return None
        target.register(collector)
        _state_collectors[id(target)] = collector
    return collector


@dataclass
class MetricsServer:
    """A running metrics endpoint; ``close`` stops it."""

    host: str
    port: int
    _server: WSGIServer
    _thread: threading.Thread
    # Closed with the server: its lease goes at once, not a TTL later.
    state: StateCollector | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        if self.state is not None:
            self.state.close()


def serve_metrics(host: str, port: int, registry: CollectorRegistry | None = None
                  ) -> MetricsServer:
    """Serve ``registry`` (default: this process's) on ``http://host:port/metrics`` from a
    daemon thread; port 0 picks a free one."""
    from prometheus_client import start_http_server

    try:
        server, thread = start_http_server(port, addr=host,
                                           registry=registry or process_registry())
    except OSError as exc:
        raise ConfigError(f"cannot serve metrics on {host}:{port}: {exc}") from exc
    return MetricsServer(host=host, port=int(server.server_port), _server=server,
                         _thread=thread)


def exported_series_names() -> frozenset[str]:
    """Every series name hopindex can export (``_total``, ``_bucket``, ``_sum``, ``_count``
    included), a worker's ``process_*`` among them: what dashboards and alert rules may
    query."""
    from prometheus_client.metrics import MetricWrapperBase

    families = [family for value in vars(_metrics).values()
                if isinstance(value, MetricWrapperBase) for family in value.describe()]
    families += StateCollector(Settings()).describe()
    families += ProcessTreeCollector().describe()
    names: set[str] = set()
    for family in families:
        if family.type == "counter":
            names.add(family.name + "_total")
        elif family.type == "histogram":
            names.update(family.name + suffix for suffix in ("_bucket", "_sum", "_count"))
        else:
            names.add(family.name)
    return frozenset(names)
