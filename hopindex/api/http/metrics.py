"""``/metrics``: the process's Prometheus registry, in OpenMetrics when the request's
``Accept`` asks for ``application/openmetrics-text``, else in the Prometheus text format.

Index names are what listings scope per key, so a scrape names them only where a
key would see them: ``HOPINDEX_API_METRICS_ACCESS=key`` (with keys configured) makes
``/metrics`` need a read key, and its label values name the indexes that key
covers. Otherwise (public, the default, so Prometheus scrapes it like the probes)
series labelled by index are summed over indexes and carry no index label, unless
the operator opts in with ``HOPINDEX_API_METRICS_INDEX_LABELS=always``. Label values
never name documents or keys.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from aiohttp import hdrs, web
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from hopindex.api.http.routing import PRINCIPAL_KEY, Guard, Route, context
from hopindex.core.settings import MetricsAccess, MetricsIndexLabels, Settings
from hopindex.monitoring.exposition import process_registry, render_metrics

PATH = "/metrics"
INDEX_LABEL = "index"


class Exposure(enum.StrEnum):
    NAMED = "named"  # every index by name
    SCOPED = "scoped"  # the key's indexes by name; the others' series left out
    SUMMED = "summed"  # no index label: each series summed over indexes


@dataclass(frozen=True, slots=True)
class IndexView:
    exposure: Exposure
    indexes: frozenset[str] = frozenset()  # for SCOPED


def may_name_indexes(settings: Settings) -> bool:
    """Whether any scrape of this server's /metrics can name indexes. When none can,
    the server leaves the Redis gauges (units per index) to a worker's metrics port:
    exporting them summed would take the one exporter lease (monitoring.collector) and
    hide their index labels from every dashboard."""
    labels = settings.api_metrics_index_labels
    return labels is MetricsIndexLabels.ALWAYS or (
        labels is MetricsIndexLabels.AUTO and settings.api_metrics_access is MetricsAccess.KEY)


def index_view(settings: Settings, protected: bool, indexes: frozenset[str] | None
               ) -> IndexView:
    """How a scrape shows indexes. ``protected``: it was made with a key (keys are
    configured and /metrics needs one); ``indexes``: the key's (None: all)."""
    labels = settings.api_metrics_index_labels
    if labels is MetricsIndexLabels.NEVER or (labels is MetricsIndexLabels.AUTO
                                              and not protected):
        return IndexView(Exposure.SUMMED)
    if indexes is None:
        return IndexView(Exposure.NAMED)
    return IndexView(Exposure.SCOPED, indexes)


def viewed(families: Iterable[Metric], view: IndexView) -> Iterator[Metric]:
    """``families`` with their index labels as ``view`` says."""
    for family in families:
        if view.exposure is Exposure.NAMED or not any(
                INDEX_LABEL in sample.labels for sample in family.samples):
            yield family
            continue
        out = Metric(family.name, family.documentation, family.type, family.unit)
        if view.exposure is Exposure.SCOPED:
            out.samples = [s for s in family.samples
                           if s.labels.get(INDEX_LABEL) in view.indexes]
        else:
            out.samples = _summed(family.samples)
        yield out


def _summed(samples: Sequence[Sample]) -> list[Sample]:
    # Counters, gauges and histogram buckets all add up across indexes; the order of
    # first appearance keeps a histogram's buckets in ``le`` order.
    totals: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for sample in samples:
        labels = tuple((k, v) for k, v in sample.labels.items() if k != INDEX_LABEL)
        key = (sample.name, labels)
        totals[key] = totals.get(key, 0.0) + sample.value
    return [Sample(name, dict(labels), value) for (name, labels), value in totals.items()]


class _View(Collector):
    def __init__(self, source: CollectorRegistry, view: IndexView) -> None:
        self._source = source
        self._view = view

    def collect(self) -> Iterable[Metric]:
        return viewed(self._source.collect(), self._view)


def render_view(view: IndexView, source: CollectorRegistry | None = None, accept: str = ""
                ) -> tuple[bytes, str]:
    """The exposition of ``source`` (default: this process's registry) seen through
    ``view``, in the format ``accept`` (the request's header) asks for."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_View(source or process_registry(), view))
    return render_metrics(registry, accept)


async def metrics(request: web.Request) -> web.Response:
    ctx = context(request)
    who = request.get(PRINCIPAL_KEY)
    protected = (ctx.settings.api_metrics_access is MetricsAccess.KEY and ctx.keys.configured
                 and who is not None)
    view = index_view(ctx.settings, protected, who.indexes if who is not None else None)
    # Collecting walks every metric: off the loop, like any other blocking call.
    body, content_type = await ctx.blocking.run(
        render_view, view, accept=request.headers.get(hdrs.ACCEPT, ""))
    return web.Response(body=body, headers={"Content-Type": content_type})


ROUTES = [Route("GET", PATH, metrics, Guard.PUBLIC)]


def configured_routes(routes: Iterable[Route], settings: Settings) -> list[Route]:
    """``routes`` with ``/metrics`` behind a read key when the settings ask for one."""
    needs_key = settings.api_metrics_access is MetricsAccess.KEY
    return [dataclasses.replace(r, guard=Guard.READ) if needs_key and r.path == PATH else r
            for r in routes]
