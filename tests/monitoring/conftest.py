"""Fixtures of the monitoring tests: the Prometheus and Alertmanager binaries and the
shipped files."""

from __future__ import annotations

import json
from importlib.resources import as_file, files
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.monitoring.prometheus_server import PrometheusTools, prometheus_tools

if TYPE_CHECKING:
    from tests.monitoring.alertmanager_server import AlertmanagerTools


@pytest.fixture(scope="session")
def tools() -> PrometheusTools:
    """``prometheus`` and ``promtool`` (Debian's package, installed when missing)."""
    return prometheus_tools()


@pytest.fixture(scope="session")
def am_tools() -> AlertmanagerTools:
    """``amtool`` and the Alertmanager server (Debian's package, installed when missing)."""
    # Imported here: that module takes monitoring_dir from this one.
    from tests.monitoring.alertmanager_server import alertmanager_tools

    return alertmanager_tools()


def monitoring_dir() -> Path:
    """The package-data folder as installed (``importlib.resources``)."""
    with as_file(files("hopindex") / "monitoring") as path:
        return Path(path)


@pytest.fixture(scope="session")
def dashboard() -> dict[str, Any]:
    path = monitoring_dir() / "grafana" / "provisioning" / "dashboards" / "hopindex.json"
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded
