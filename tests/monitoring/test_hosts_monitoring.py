"""Monitoring without docker-compose, end to end: Prometheus (Debian's binary) runs the
shipped prometheus-hosts.yml, finds a real ``hopindex worker`` and the API through its
file_sd targets files, and sends the shipped alert rules' alerts to a real Alertmanager
running the shipped config, which POSTs them to a webhook.

The copies differ from the shipped files only where a test cannot wait: scrape and
rule evaluation every second instead of 15, HopindexWorkerDown firing at once instead
of after 2 minutes, and the targets files listing this test's ports.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml

from hopindex.api.http.server import BackgroundServer
from hopindex.core.settings import Settings
from hopindex.testing.redis_server import free_port
from hopindex.testing.workers import READY_MARK, HopindexProcess
from tests.conftest import local_client
from tests.monitoring.alertmanager_server import (
    AlertmanagerServer,
    AlertmanagerTools,
    WebhookReceiver,
    render_config,
)
from tests.monitoring.conftest import monitoring_dir
from tests.monitoring.prometheus_server import PrometheusServer, PrometheusTools
from tests.workers.conftest import private_redis  # noqa: F401  # a fixture

pytestmark = pytest.mark.integration

CONCURRENCY = 2


def write_yaml(path: Path, data: Any) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def hosts_config_copy(folder: Path, *, worker_up: int, worker_down: int, api: int,
                      alertmanager: int) -> Path:
    """The shipped prometheus folder copied to ``folder``, as the module docstring says."""
    shutil.copytree(monitoring_dir() / "prometheus", folder)
    config_path = folder / "prometheus-hosts.yml"
    config = yaml.safe_load(config_path.read_text())
    config["global"] = {"scrape_interval": "1s", "scrape_timeout": "1s",
                        "evaluation_interval": "1s"}
    write_yaml(config_path, config)
    rules = yaml.safe_load((folder / "alerts.yml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == "HopindexWorkerDown":
                rule["for"] = "0s"
    write_yaml(folder / "alerts.yml", rules)
    targets = folder / "targets"
    write_yaml(targets / "hopindex-worker.yml", [
        {"targets": [f"127.0.0.1:{worker_up}"], "labels": {"service": "worker-stage1"}},
        {"targets": [f"127.0.0.1:{worker_down}"], "labels": {"service": "worker-stage2"}}])
    write_yaml(targets / "hopindex-api.yml",
               [{"targets": [f"127.0.0.1:{api}"], "labels": {"service": "api"}}])
    write_yaml(targets / "alertmanager.yml", [{"targets": [f"127.0.0.1:{alertmanager}"]}])
    return config_path


@pytest.fixture
def webhook() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()
    yield receiver
    receiver.close()


def test_hosts_config_scrapes_by_file_sd_and_alerts_reach_the_webhook(
        tmp_path: Path, tools: PrometheusTools, am_tools: AlertmanagerTools,
        private_redis: str, webhook: WebhookReceiver) -> None:  # noqa: F811  # the fixture
    """The worker is scraped as job hopindex-worker with its targets file's service label,
    and reports its serving process plus its prefork children; the API is scraped as
    hopindex-api; the worker group nobody runs fires HopindexWorkerDown, which
    Alertmanager delivers to the webhook with the job and service labels."""
    settings = Settings(data_dir=tmp_path / "data", broker_url=private_redis,
                        state_url=private_redis, metrics_dir=str(tmp_path / "metrics"))
    worker_port, dead_port = free_port(), free_port()
    with ExitStack() as stack:
        rendered = tmp_path / "alertmanager.yml"
        done = render_config(rendered, webhook.url)
        assert done.returncode == 0, done.stderr
        manager = stack.enter_context(AlertmanagerServer(am_tools, tmp_path / "am", rendered))
        worker = HopindexProcess(
            settings, ["worker", "--queues", "stage1", "--pool", "prefork",
                       "--concurrency", str(CONCURRENCY), "--metrics-port", str(worker_port),
                       "--metrics-host", "127.0.0.1"],
            name="worker", log_path=tmp_path / "worker.log", ready_mark=READY_MARK)
        stack.callback(worker.stop)
        client = stack.enter_context(local_client(Settings(data_dir=tmp_path / "api").resolved()))
        api = stack.enter_context(BackgroundServer(client.service))
        api_port = int(api.url.rsplit(":", 1)[1])
        config = hosts_config_copy(tmp_path / "prometheus-config", worker_up=worker_port,
                                   worker_down=dead_port, api=api_port,
                                   alertmanager=manager.port)
        prom = stack.enter_context(PrometheusServer(tools, tmp_path / "prometheus",
                                                    config_path=config))
        worker.wait_ready()

        up = 'up{job="hopindex-worker",service="worker-stage1"}'
        prom.wait_for(up, lambda v: v == 1, timeout_s=30)
        processes = prom.wait_for(
            'hopindex_worker_processes{job="hopindex-worker",service="worker-stage1"}',
            lambda v: v == 1 + CONCURRENCY, timeout_s=30)
        assert processes == 1 + CONCURRENCY
        worker_rss = prom.value('process_resident_memory_bytes{job="hopindex-worker"}')
        assert worker_rss is not None and worker_rss > 0
        prom.wait_for('up{job="hopindex-api",service="api"}', lambda v: v == 1, timeout_s=30)
        assert (prom.value('process_resident_memory_bytes{job="hopindex-api"}') or 0) > 0

        alert = webhook.wait_for("HopindexWorkerDown", timeout_s=90)
        assert alert["status"] == "firing"
        assert alert["labels"]["job"] == "hopindex-worker"
        assert alert["labels"]["service"] == "worker-stage2"
        assert alert["labels"]["instance"] == f"127.0.0.1:{dead_port}"
        assert alert["labels"]["severity"] == "critical"
        assert "worker-stage2" in alert["annotations"]["summary"]
        # The live worker raised none.
        assert all(a["labels"].get("service") != "worker-stage1" for a in webhook.alerts())
