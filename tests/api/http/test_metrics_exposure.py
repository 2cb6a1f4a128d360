"""``/metrics`` names indexes only where a key would see them: public scrapes get series
summed over indexes, with no index label; with HOPINDEX_API_METRICS_ACCESS=key a read
key is needed and sees the indexes it covers; HOPINDEX_API_METRICS_INDEX_LABELS opts in
(always) or out (never)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.parser import text_string_to_metric_families

from hopindex.api.http.metrics import Exposure, IndexView, configured_routes, render_view
from hopindex.api.http.openapi.spec import build_spec
from hopindex.api.http.routes import ALL_ROUTES
from hopindex.api.http.routing import Guard
from hopindex.core.settings import Settings
from tests.api.http.conftest import SCOPED_INDEX, Api, ApiFactory, sample_documents

OTHER_INDEX = "tenant-b"
SamplesByLabels = dict[tuple[tuple[str, str], ...], float]


def samples(text: str, name: str) -> SamplesByLabels:
    """The samples named ``name`` in an exposition, keyed by their sorted labels."""
    return {tuple(sorted(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples
            if s.name == name}


def private_registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    docs = Counter("t_docs", "docs", ["index", "outcome"], registry=registry)
    docs.labels(index="alpha", outcome="indexed").inc(3)
    docs.labels(index="beta", outcome="indexed").inc(4)
    docs.labels(index="beta", outcome="failed").inc(1)
    latency = Histogram("t_latency_seconds", "latency", ["index"], buckets=(0.1, 1.0),
                        registry=registry)
    latency.labels(index="alpha").observe(0.05)
    latency.labels(index="beta").observe(0.5)
    Gauge("t_plain", "no index label", ["queue"], registry=registry).labels(queue="q").set(2)
    return registry


def test_summed_view_drops_index_names_and_keeps_totals() -> None:
    """Summed: counters add up per remaining labels, histogram buckets stay cumulative
    and in order, and series without an index label are untouched."""
    text = render_view(IndexView(Exposure.SUMMED), private_registry())[0].decode()
    assert "alpha" not in text and "beta" not in text
    assert samples(text, "t_docs_total") == {(("outcome", "indexed"),): 7.0,
                                             (("outcome", "failed"),): 1.0}
    buckets = samples(text, "t_latency_seconds_bucket")
    assert buckets == {(("le", "0.1"),): 1.0, (("le", "1.0"),): 2.0, (("le", "+Inf"),): 2.0}
    assert samples(text, "t_latency_seconds_count") == {(): 2.0}
    assert samples(text, "t_plain") == {(("queue", "q"),): 2.0}


def test_named_and_scoped_views() -> None:
    """Named shows every index; scoped only the listed ones, the others left out."""
    named = render_view(IndexView(Exposure.NAMED), private_registry())[0].decode()
    assert {dict(k)["index"] for k in samples(named, "t_docs_total")} == {"alpha", "beta"}
    scoped = render_view(IndexView(Exposure.SCOPED, frozenset({"alpha"})),
                         private_registry())[0].decode()
    assert "beta" not in scoped
    assert samples(scoped, "t_docs_total") == {(("index", "alpha"), ("outcome", "indexed")): 3.0}


def test_key_mode_guards_the_route_and_the_spec_says_so() -> None:
    """With access=key the /metrics route needs a read key and the spec drops its empty
    security; public leaves both as they were."""
    keyed = Settings(data_dir=Path("unused"), api_metrics_access="key")  # type: ignore[arg-type]  # parsed to the enum
    route = next(r for r in configured_routes(ALL_ROUTES, keyed) if r.path == "/metrics")
    assert route.guard is Guard.READ
    op = build_spec(keyed)["paths"]["/metrics"]["get"]
    assert "security" not in op and "401" in op["responses"]
    public = build_spec(Settings(data_dir=Path("unused")))["paths"]["/metrics"]["get"]
    assert public["security"] == []


@pytest.fixture(scope="module")
def ingested(make_api: ApiFactory) -> Api:
    """A server with documents ingested into two indexes (document counts per index
    are in this process's metrics from then on)."""
    api = make_api()
    _, docs = sample_documents(limit=2)
    for index in (SCOPED_INDEX, OTHER_INDEX):
        job = api.call("POST", f"/v1/indexes/{index}/documents", json=docs)
        assert job.status_code == 202, job.text
        assert api.wait_job(job.json()["job_id"])["state"] == "succeeded"
    return api


def indexes_named(text: str) -> set[str]:
    return {value for family in text_string_to_metric_families(text)
            for s in family.samples for label, value in s.labels.items() if label == "index"}


@pytest.mark.integration
def test_public_metrics_name_no_index(ingested: Api) -> None:
    """The default (public, auto): no key needed, no index name in any label, and the
    documents are still counted, summed over indexes."""
    response = ingested.call("GET", "/metrics", key=None)
    assert response.status_code == 200
    assert indexes_named(response.text) == set()
    assert SCOPED_INDEX not in response.text and OTHER_INDEX not in response.text
    indexed = samples(response.text, "hopindex_documents_ingested_total")
    assert indexed[(("outcome", "indexed"),)] >= 4.0


@pytest.mark.integration
@pytest.mark.parametrize(("overrides", "key", "status", "expected"), [
    ({"api_metrics_access": "key"}, None, 401, None),
    ({"api_metrics_access": "key"}, "read", 200, {SCOPED_INDEX, OTHER_INDEX}),
    ({"api_metrics_access": "key"}, "scoped", 200, {SCOPED_INDEX}),
    ({"api_metrics_access": "key", "api_metrics_index_labels": "never"}, "read", 200, set()),
    ({"api_metrics_index_labels": "always"}, None, 200, {SCOPED_INDEX, OTHER_INDEX}),
])
def test_index_names_only_where_a_key_would_see_them(
        ingested: Api, make_api: ApiFactory, overrides: dict[str, Any], key: str | None,
        status: int, expected: set[str] | None) -> None:
    """Behind a key, a scrape names the indexes the key covers; ``never`` names none even
    then; ``always`` names every index on a public endpoint."""
    api = make_api(**overrides)
    response = api.call("GET", "/metrics", key=key)
    assert response.status_code == status, response.text
    if expected is not None:
        named = indexes_named(response.text)
        assert named & {SCOPED_INDEX, OTHER_INDEX} == expected
        if key == "scoped" or not expected:  # nothing beyond what the key covers
            assert named == expected
