"""A real Alertmanager for tests (Debian's ``prometheus-alertmanager``: ``amtool`` and the
server), the shipped config rendered as docker-compose renders it, and a webhook
receiver that keeps what Alertmanager POSTs.

``alertmanager_tools`` installs the package when missing and the tests run as root
(CI machines), and skips with the reason only when that is impossible, like
``prometheus_tools``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from hopindex.testing.redis_server import free_port
from tests.monitoring.conftest import monitoring_dir
from tests.monitoring.prometheus_server import ServerProcess, tools_or_skip
from tests.waiting import wait_until

PACKAGE = "prometheus-alertmanager"
# Debian names the server after its package; upstream's tarball calls it alertmanager.
SERVER_NAMES = ("prometheus-alertmanager", "alertmanager")
START_TIMEOUT_S = 30.0
ALERTMANAGER_DIR = monitoring_dir() / "alertmanager"
TEMPLATE = ALERTMANAGER_DIR / "alertmanager.yml.tmpl"
RENDER_SCRIPT = ALERTMANAGER_DIR / "render-config.sh"


@dataclass(frozen=True)
class AlertmanagerTools:
    alertmanager: str
    amtool: str

    def amtool_run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.amtool, *args], capture_output=True, text=True,
                              timeout=60, check=False)


def _found() -> AlertmanagerTools | None:
    amtool = shutil.which("amtool")
    server = next((found for name in SERVER_NAMES if (found := shutil.which(name))), None)
    return AlertmanagerTools(server, amtool) if server and amtool else None


def alertmanager_tools() -> AlertmanagerTools:
    """The binaries, installed when missing; skips the test with the reason otherwise."""
    return tools_or_skip(_found, PACKAGE, "alertmanager/amtool")


def render_config(output: Path, webhook_url: str | None) -> subprocess.CompletedProcess[str]:
    """Run the shipped render-config.sh as the compose service does (``sh``, the URL in
    ALERTMANAGER_WEBHOOK_URL; None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != "ALERTMANAGER_WEBHOOK_URL"}
    if webhook_url is not None:
        env["ALERTMANAGER_WEBHOOK_URL"] = webhook_url
    return subprocess.run(["sh", str(RENDER_SCRIPT), str(TEMPLATE), str(output)],
                          capture_output=True, text=True, env=env, timeout=30, check=False)


class WebhookReceiver:
    """An HTTP server on a free loopback port keeping every JSON body POSTed to it."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        received = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_port}/alerts?team=search&x=1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def alerts(self) -> list[dict[str, Any]]:
        """Every alert of every notification received so far."""
        return [alert for body in list(self.bodies) for alert in body["alerts"]]

    def wait_for(self, alertname: str, timeout_s: float = 60.0) -> dict[str, Any]:
        """The first alert named ``alertname`` to arrive; fails after ``timeout_s``."""
        def arrived() -> list[dict[str, Any]]:
            return [alert for alert in self.alerts()
                    if alert["labels"].get("alertname") == alertname]

        try:
            return wait_until(arrived, what=f"a {alertname} alert", timeout_s=timeout_s,
                              interval_s=0.2)[0]
        except AssertionError as exc:
            raise AssertionError(f"no {alertname} alert within {timeout_s} s; received: "
                                 f"{self.alerts()}") from exc

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class AlertmanagerServer(ServerProcess):
    """Alertmanager on a free loopback port with ``config``, storing in ``tmp``; no
    cluster listener (it would take port 9094)."""

    def __init__(self, tools: AlertmanagerTools, tmp: Path, config: Path) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp / "alertmanager.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [tools.alertmanager, f"--config.file={config}", f"--storage.path={tmp / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address=",
             "--log.level=warn"],
            stdout=self._log, stderr=subprocess.STDOUT)
        try:
            self._wait_ready("alertmanager", START_TIMEOUT_S)
        except BaseException:
            self.stop()
            raise

