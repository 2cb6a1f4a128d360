"""Every metrics endpoint negotiates its format: ``Accept: application/openmetrics-text``
gets OpenMetrics (its content type, ending in ``# EOF``), anything else the Prometheus
text format. Checked on the HTTP API's ``/metrics`` and on a worker's metrics port, over
real HTTP."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.parser import text_string_to_metric_families as parse_text

from hopindex.api.http.metrics import Exposure, IndexView, render_view
from hopindex.api.http.server import BackgroundServer
from hopindex.core.settings import Settings
from hopindex.monitoring.exposition import render_metrics, serve_metrics
from tests.conftest import local_client

OPENMETRICS = "application/openmetrics-text"


def parse_om(text: str) -> Iterator[Metric]:
    """The OpenMetrics parser, typed: prometheus_client ships it without annotations."""
    families: Iterator[Metric] = text_string_to_metric_families(text)  # type: ignore[no-untyped-call]
    return families

# What Prometheus 2.x sends: OpenMetrics first, the text format as a fallback.
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def scrape(url: str, accept: str | None) -> tuple[str, str]:
    """The body and content type of one GET of ``url``, with ``accept`` if given."""
    headers = {"Accept": accept} if accept is not None else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                timeout=30) as answer:
        return answer.read().decode(), answer.headers["Content-Type"]


def assert_openmetrics(body: str, content_type: str) -> set[str]:
    """OpenMetrics by content type and by shape; the sample names it parses to."""
    assert content_type.startswith(OPENMETRICS), content_type
    assert body.endswith("# EOF\n"), body[-200:]
    return {s.name for family in parse_om(body) for s in family.samples}


def assert_text(body: str, content_type: str) -> set[str]:
    """The Prometheus text format by content type and by shape; its sample names."""
    assert content_type.startswith("text/plain"), content_type
    assert "# EOF" not in body
    return {s.name for family in parse_text(body) for s in family.samples}


def registry() -> CollectorRegistry:
    own = CollectorRegistry()
    Counter("t_done", "done", ["outcome"], registry=own).labels(outcome="ok").inc(2)
    Histogram("t_seconds", "seconds", buckets=(1.0,), registry=own).observe(0.5)
    return own


@pytest.mark.parametrize("accept", [OPENMETRICS, PROMETHEUS_ACCEPT,
                                    "application/openmetrics-text; version=1.0.0"])
def test_render_metrics_gives_openmetrics_when_asked(accept: str) -> None:
    """Any Accept that names OpenMetrics first, as Prometheus's own does: OpenMetrics,
    which parses back to the same samples."""
    body, content_type = render_metrics(registry(), accept)
    names = assert_openmetrics(body.decode(), content_type)
    assert {"t_done_total", "t_seconds_bucket", "t_seconds_count"} <= names


@pytest.mark.parametrize("accept", ["", "text/plain", "text/plain;version=0.0.4", "*/*",
                                    "application/json"])
def test_render_metrics_gives_the_text_format_otherwise(accept: str) -> None:
    """No Accept, the text format, or anything else: the Prometheus text format."""
    body, content_type = render_metrics(registry(), accept)
    assert {"t_done_total", "t_seconds_bucket"} <= assert_text(body.decode(), content_type)


def test_the_api_view_renders_openmetrics_too() -> None:
    """Summing over indexes builds new families; they still make valid OpenMetrics."""
    source = CollectorRegistry()
    docs = Counter("t_docs", "docs", ["index", "outcome"], registry=source)
    docs.labels(index="a", outcome="indexed").inc(1)
    docs.labels(index="b", outcome="indexed").inc(2)
    body, content_type = render_view(IndexView(Exposure.SUMMED), source, accept=OPENMETRICS)
    assert_openmetrics(body.decode(), content_type)
    (family,) = [f for f in parse_om(body.decode()) if f.name == "t_docs"]
    assert [(s.labels, s.value) for s in family.samples] == [({"outcome": "indexed"}, 3.0)]


@pytest.fixture(scope="module")
def api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real API server (embedded backends, no keys, loopback)."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("api")).resolved()
    with local_client(settings) as client, BackgroundServer(client.service) as server:
        yield server.url + "/metrics"


def test_the_api_negotiates_on_its_metrics_route(api_url: str) -> None:
    """The API's /metrics: OpenMetrics for an OpenMetrics Accept (hopindex and process
    series in it), the text format without one."""
    names = assert_openmetrics(*scrape(api_url, OPENMETRICS))
    assert "process_resident_memory_bytes" in names
    assert "# TYPE hopindex_queries counter" in scrape(api_url, OPENMETRICS)[0]
    assert_openmetrics(*scrape(api_url, PROMETHEUS_ACCEPT))
    assert "process_resident_memory_bytes" in assert_text(*scrape(api_url, None))
    assert_text(*scrape(api_url, "text/plain"))


def test_a_metrics_server_negotiates() -> None:
    """``serve_metrics`` (what a worker's --metrics-port runs) negotiates the same way."""
    server = serve_metrics("127.0.0.1", 0, registry())
    try:
        assert "t_done_total" in assert_openmetrics(*scrape(server.url, OPENMETRICS))
        assert "t_done_total" in assert_text(*scrape(server.url, None))
    finally:
        server.close()


WORKER = """
import os, sys, time
from hopindex.core.settings import Settings
from hopindex.monitoring.multiprocess import start_worker_metrics

server = start_worker_metrics(Settings(metrics_dir=sys.argv[1]), "127.0.0.1", 0)
from hopindex.monitoring import metrics as m

pid = os.fork()  # a pool child that ran a task, alive while the endpoint is scraped
if pid == 0:
    m.STAGE_TASKS.labels(stage="stage1", outcome="succeeded").inc(3)
    print("URL", server.url, flush=True)
    time.sleep(600)  # alive until killed below, while the test scrapes: not a wait
    os._exit(0)
sys.stdin.readline()
os.kill(pid, 9)
os.waitpid(pid, 0)
server.close()
"""


@pytest.fixture
def worker_url(tmp_path: Path) -> Iterator[str]:
    """A worker's metrics endpoint as ``start_worker_metrics`` serves it (multiprocess
    mode), with one forked pool child."""
    process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(WORKER),
                                str(tmp_path / "metrics")], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdin is not None
    # Log lines come first on the same stream.
    url = next((line.split()[1] for line in process.stdout if line.startswith("URL ")), None)
    assert url is not None, f"the worker endpoint did not start (exit {process.wait()})"
    yield url
    process.stdin.close()
    process.wait(timeout=30)


def test_a_worker_endpoint_negotiates_and_serves_its_process_tree(worker_url: str) -> None:
    """The worker's endpoint: its children's counters and process_* for the serving
    process and its child, in OpenMetrics when asked and in the text format otherwise."""
    wanted = {"hopindex_stage_tasks_total", "process_resident_memory_bytes",
              "process_cpu_seconds_total", "hopindex_worker_processes"}
    body, content_type = scrape(worker_url, OPENMETRICS)
    assert wanted <= assert_openmetrics(body, content_type)
    assert unlabelled(parse_om(body))["hopindex_worker_processes"] == 2
    body, content_type = scrape(worker_url, None)
    assert wanted <= assert_text(body, content_type)
    assert unlabelled(parse_text(body))["hopindex_worker_processes"] == 2


def unlabelled(families: Iterable[Metric]) -> dict[str, float]:
    return {s.name: s.value for f in families for s in f.samples if not s.labels}
