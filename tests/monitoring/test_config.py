"""The shipped Prometheus configs (docker-compose's and the hosts' one), alert rules and
Grafana dashboard are valid, agree on the job names, and query only series hopindex
exports."""

from __future__ import annotations

import re
from collections.abc import Iterator
from fnmatch import fnmatch
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
COMPOSE_CONFIG = "prometheus.yml"
HOSTS_CONFIG = "prometheus-hosts.yml"
# The contract the rules and the dashboard rely on.
JOBS = {"hopindex-api", "hopindex-worker"}
_JOB_SELECTOR = re.compile(r'\bjob\s*(?:=|=~)\s*"([^"]+)"')
_HOST_PORT = re.compile(r"^[A-Za-z0-9.\-]+:\d{1,5}$")
# Grafana 9.0 wrote schema 36; 11.x writes 39-41.
SCHEMA_VERSIONS = range(36, 42)
_METRIC = re.compile(r"\b(?:hopindex|process)_[A-Za-z0-9_]+")


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


def load_config(name: str) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((PROMETHEUS_DIR / name).read_text())
    return config


def sd_files(pattern: str) -> list[Path]:
    """The files a file_sd pattern (relative to the config, ``*`` in its last part) matches."""
    folder, _, name = pattern.rpartition("/")
    return sorted(p for p in (PROMETHEUS_DIR / folder).iterdir() if fnmatch(p.name, name))


def target_groups(config: dict[str, Any], job: str) -> list[dict[str, Any]]:
    """The target groups of the hosts config's ``job``, read from its file_sd files."""
    (scrape,) = [s for s in config["scrape_configs"] if s["job_name"] == job]
    return [group for sd in scrape["file_sd_configs"] for pattern in sd["files"]
            for path in sd_files(pattern) for group in yaml.safe_load(path.read_text())]


@pytest.mark.parametrize("name", [COMPOSE_CONFIG, HOSTS_CONFIG])
def test_promtool_accepts_the_config_and_its_rule_files(tools: PrometheusTools,
                                                        name: str) -> None:
    """``promtool check config`` passes on both configs, each loading alerts.yml, with no
    warning (a file_sd pattern matching no file would be one)."""
    done = tools.promtool_run("check", "config", name, cwd=PROMETHEUS_DIR)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 rule files found" in done.stdout + done.stderr
    assert "WARNING" not in done.stdout + done.stderr, done.stdout + done.stderr


@pytest.mark.parametrize("name", [COMPOSE_CONFIG, HOSTS_CONFIG])
def test_job_names_are_the_contract_rules_and_dashboard_rely_on(
        name: str, dashboard: dict[str, Any]) -> None:
    """Both configs scrape exactly the jobs hopindex-api and hopindex-worker, say so in
    their comments, and every job the rules or the dashboard select is one of them."""
    config = load_config(name)
    assert {job["job_name"] for job in config["scrape_configs"]} == JOBS
    text = (PROMETHEUS_DIR / name).read_text()
    assert all(f"#   {job}" in text for job in JOBS), "the contract is not in the comment"
    assert config["rule_files"] == ["alerts.yml"]
    selected = {job for expr in rule_exprs() + dashboard_exprs(dashboard)
                for job in _JOB_SELECTOR.findall(expr)}
    assert selected, "no rule or panel selects a job"
    for job in selected:
        assert any(re.fullmatch(job, known) for known in JOBS), job
    assert {job for job in JOBS if any(re.fullmatch(s, job) for s in selected)} == JOBS


def test_the_hosts_config_reads_its_targets_from_the_shipped_files() -> None:
    """Each job's file_sd patterns match shipped targets files: host:port targets, each
    group labelled with its service; one worker per queue, each on its own port, and
    the API; alerts go to the Alertmanagers of targets/alertmanager.yml."""
    config = load_config(HOSTS_CONFIG)
    groups = {job: target_groups(config, job) for job in JOBS}
    for job, found in groups.items():
        assert found, job
        for group in found:
            assert group["targets"], job
            assert all(_HOST_PORT.match(t) for t in group["targets"]), group
            assert group["labels"]["service"], group
    workers = {g["labels"]["service"]: g["targets"] for g in groups["hopindex-worker"]}
    assert set(workers) == WORKER_SERVICES
    ports = [t.rsplit(":", 1)[1] for targets in workers.values() for t in targets]
    assert len(ports) == len(set(ports)), "two workers of one host share a port"
    assert {g["labels"]["service"] for g in groups["hopindex-api"]} == {"api"}
    (alerting,) = config["alerting"]["alertmanagers"]
    managers = [group for sd in alerting["file_sd_configs"] for pattern in sd["files"]
                for path in sd_files(pattern) for group in yaml.safe_load(path.read_text())]
    assert managers and all(_HOST_PORT.match(t) for g in managers for t in g["targets"])


def test_the_compose_config_sends_alerts_to_the_stacks_alertmanager() -> None:
    """docker-compose's Prometheus sends alerts to the alertmanager service's port."""
    (alerting,) = load_config(COMPOSE_CONFIG)["alerting"]["alertmanagers"]
    assert alerting["static_configs"] == [{"targets": ["alertmanager:9093"]}]


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
    would leave a panel silently empty); a worker's ``process_*`` count as exported."""
    exprs = dashboard_exprs(dashboard) if source == "dashboard" else rule_exprs()
    queried = {name for e in exprs for name in _METRIC.findall(e)}
    assert queried, "no hopindex metric queried at all"
    assert queried - exported_series_names() == set()


def test_the_dashboard_covers_what_an_operator_asks_for(dashboard: dict[str, Any]) -> None:
    """Ingest backlog and throughput, job states, LLM requests/tokens/latency, 429s and
    limiter waits, cache hits, query latency quantiles, calls and tokens per query, a
    streamed query's time to its first answer token, the reranker's requests, the
    ingestion multiplier (LLM tokens per corpus token), and each instance's memory and
    CPU (a worker's over all its processes)."""
    text = "\n".join(dashboard_exprs(dashboard))
    for needle in ("hopindex_queue_depth", "hopindex_stage_tasks_total", "hopindex_jobs",
                   "hopindex_llm_requests_total", "hopindex_llm_tokens_total",
                   "hopindex_llm_request_duration_seconds_bucket", 'outcome="rate_limited"',
                   "hopindex_ratelimit_wait_seconds", "hopindex_llm_cache_requests_total",
                   "histogram_quantile(0.99, sum by (method, le) "
                   "(rate(hopindex_query_duration_seconds_bucket",
                   "hopindex_query_llm_calls", "hopindex_query_tokens",
                   "hopindex_query_first_token_seconds_bucket",
                   "hopindex_rerank_requests_total", "hopindex_ingest_llm_tokens_total",
                   "hopindex_ingest_corpus_tokens_total",
                   "hopindex_stage_task_failures_total", "process_resident_memory_bytes",
                   "hopindex_worker_proportional_memory_bytes", "process_cpu_seconds_total"):
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
    """The datasource is the compose stack's Prometheus under the dashboard's default uid,
    its exemplars linked to the stack's Jaeger; the dashboard provider reads the folder
    the JSON ships in, as mounted."""
    sources = yaml.safe_load((GRAFANA_DIR / "datasources" / "prometheus.yml").read_text())
    (source,) = sources["datasources"]
    assert source["type"] == "prometheus"
    assert source["url"] == "http://prometheus:9090"
    assert source["uid"] == DATASOURCE_UID
    # Exemplars' trace ids open in the stack's Jaeger, provisioned beside it.
    traces = yaml.safe_load((GRAFANA_DIR / "datasources" / "jaeger.yml").read_text())
    (jaeger,) = traces["datasources"]
    assert (jaeger["type"], jaeger["url"]) == ("jaeger", "http://jaeger:16686")
    assert source["jsonData"]["exemplarTraceIdDestinations"] == [
        {"name": "trace_id", "datasourceUid": jaeger["uid"]}]
    providers = yaml.safe_load((GRAFANA_DIR / "dashboards" / "hopindex.yml").read_text())
    (provider,) = providers["providers"]
    assert provider["type"] == "file"
    # docker-compose mounts GRAFANA_DIR at /etc/grafana/provisioning.
    assert provider["options"]["path"] == "/etc/grafana/provisioning/dashboards"
    assert (GRAFANA_DIR / "dashboards" / "hopindex.json").is_file()


def test_prometheus_scrapes_the_api_and_every_worker_replica() -> None:
    """DNS A records per compose service, so each scaled replica is its own target: the
    API on 8080, every worker service on its --metrics-port 9100."""
    config = load_config(COMPOSE_CONFIG)
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    (api,) = jobs["hopindex-api"]["dns_sd_configs"]
    assert (api["names"], api["type"], api["port"]) == (["api"], "A", 8080)
    (workers,) = jobs["hopindex-worker"]["dns_sd_configs"]
    assert set(workers["names"]) == WORKER_SERVICES
    assert (workers["type"], workers["port"]) == ("A", 9100)
    assert config["rule_files"] == ["alerts.yml"]
