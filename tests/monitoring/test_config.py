"""The shipped Prometheus config, alert rules and Grafana dashboard are valid, and query
only series hopindex exports."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hopindex.monitoring.exposition import exported_series_names
from tests.monitoring.conftest import monitoring_dir
from tests.monitoring.prometheus_server import PrometheusTools

PROMETHEUS_DIR = monitoring_dir() / "prometheus"
GRAFANA_DIR = monitoring_dir() / "grafana" / "provisioning"
WORKER_SERVICES = {"worker-stage1", "worker-stage2", "worker-embed", "worker-judge",
                   "worker-control", "worker-webhooks"}
DATASOURCE_UID = "hopindex-prometheus"
# Grafana 9.0 wrote schema 36; 11.x writes 39-41.
SCHEMA_VERSIONS = range(36, 42)
_METRIC = re.compile(r"\bhopindex_[A-Za-z0-9_]+")


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, rows' nested panels included."""
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def dashboard_exprs(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in panels(dashboard) for t in p.get("targets", [])]


def rule_exprs() -> list[str]:
    rules = yaml.safe_load((PROMETHEUS_DIR / "alerts.yml").read_text())
    return [r["expr"] for group in rules["groups"] for r in group["rules"]]


def test_promtool_accepts_the_config_and_its_rule_files(tools: PrometheusTools) -> None:
    """``promtool check config`` passes on prometheus.yml, which loads alerts.yml."""
    done = tools.promtool_run("check", "config", "prometheus.yml", cwd=PROMETHEUS_DIR)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 rule files found" in done.stdout + done.stderr


def test_promtool_accepts_the_alert_rules(tools: PrometheusTools) -> None:
    """``promtool check rules`` passes and finds every alert the issue asks for."""
    done = tools.promtool_run("check", "rules", str(PROMETHEUS_DIR / "alerts.yml"))
    assert done.returncode == 0, done.stdout + done.stderr
    rules = yaml.safe_load((PROMETHEUS_DIR / "alerts.yml").read_text())
    alerts = {r["alert"] for group in rules["groups"] for r in group["rules"]}
    assert {"HopindexJobStuck", "HopindexJobsFailing", "HopindexLlmRateLimited",
            "HopindexBacklogGrowing", "HopindexQueryLatencyHigh",
            "HopindexWorkerDown"} <= alerts


def test_every_dashboard_expression_is_valid_promql(tools: PrometheusTools,
                                                    dashboard: dict[str, Any],
                                                    tmp_path: Path) -> None:
    """Each panel query parses: promtool checks them written as recording rules (Grafana's
    ``$__rate_interval`` stands in as 5m)."""
    exprs = dashboard_exprs(dashboard)
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:expr_{i}", "expr": e.replace("$__rate_interval", "5m")}
        for i, e in enumerate(exprs)]}]}
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump(rules))
    done = tools.promtool_run("check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(exprs)} rules found" in done.stdout


@pytest.mark.parametrize("source", ["dashboard", "rules"])
def test_every_queried_metric_is_one_hopindex_exports(source: str,
                                                      dashboard: dict[str, Any]) -> None:
    """No panel or rule asks for a series name the code does not export (a renamed metric
    would leave a panel silently empty)."""
    exprs = dashboard_exprs(dashboard) if source == "dashboard" else rule_exprs()
    queried = {name for e in exprs for name in _METRIC.findall(e)}
    assert queried, "no hopindex metric queried at all"
    assert queried - exported_series_names() == set()


def test_the_dashboard_covers_what_an_operator_asks_for(dashboard: dict[str, Any]) -> None:
    """Ingest backlog and throughput, job states, LLM requests/tokens/latency, 429s and
    limiter waits, cache hits, query latency quantiles, calls and tokens per query."""
    text = "\n".join(dashboard_exprs(dashboard))
    for needle in ("hopindex_queue_depth", "hopindex_stage_tasks_total", "hopindex_jobs",
                   "hopindex_llm_requests_total", "hopindex_llm_tokens_total",
                   "hopindex_llm_request_duration_seconds_bucket", 'outcome="rate_limited"',
                   "hopindex_ratelimit_wait_seconds", "hopindex_llm_cache_requests_total",
                   "histogram_quantile(0.99, sum by (method, le) "
                   "(rate(hopindex_query_duration_seconds_bucket",
                   "hopindex_query_llm_calls", "hopindex_query_tokens",
                   "hopindex_stage_task_failures_total"):
        assert needle in text, needle


def test_the_dashboard_json_loads_as_grafana_expects(dashboard: dict[str, Any]) -> None:
    """A known schema version, unique panel ids, and every panel (rows aside) with a
    Prometheus datasource and at least one target with a query and a unique refId."""
    assert dashboard["schemaVersion"] in SCHEMA_VERSIONS
    assert dashboard["uid"] and dashboard["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert variables["datasource"]["current"]["value"] == DATASOURCE_UID
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids))
    for panel in panels(dashboard):
        assert {"h", "w", "x", "y"} <= panel["gridPos"].keys(), panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel
        targets = panel["targets"]
        assert targets, panel["title"]
        assert all(t["expr"].strip() for t in targets), panel["title"]
        ref_ids = [t["refId"] for t in targets]
        assert len(ref_ids) == len(set(ref_ids)), panel["title"]


def test_grafana_provisioning_points_at_prometheus_and_the_dashboard() -> None:
    """The datasource is the compose stack's Prometheus under the dashboard's default uid;
    the dashboard provider reads the folder the JSON ships in, as mounted."""
    sources = yaml.safe_load((GRAFANA_DIR / "datasources" / "prometheus.yml").read_text())
    (source,) = sources["datasources"]
    assert source["type"] == "prometheus"
    assert source["url"] == "http://prometheus:9090"
    assert source["uid"] == DATASOURCE_UID
    providers = yaml.safe_load((GRAFANA_DIR / "dashboards" / "hopindex.yml").read_text())
    (provider,) = providers["providers"]
    assert provider["type"] == "file"
    # docker-compose mounts GRAFANA_DIR at /etc/grafana/provisioning.
    assert provider["options"]["path"] == "/etc/grafana/provisioning/dashboards"
    assert (GRAFANA_DIR / "dashboards" / "hopindex.json").is_file()


def test_prometheus_scrapes_the_api_and_every_worker_replica() -> None:
    """DNS A records per compose service, so each scaled replica is its own target: the
    API on 8080, every worker service on its --metrics-port 9100."""
    config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    (api,) = jobs["hopindex-api"]["dns_sd_configs"]
    assert (api["names"], api["type"], api["port"]) == (["api"], "A", 8080)
    (workers,) = jobs["hopindex-worker"]["dns_sd_configs"]
    assert set(workers["names"]) == WORKER_SERVICES
    assert (workers["type"], workers["port"]) == ("A", 9100)
    assert config["rule_files"] == ["alerts.yml"]
