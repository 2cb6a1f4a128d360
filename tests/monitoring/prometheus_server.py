"""A real Prometheus for tests: Debian's ``prometheus`` package, on loopback, tmp storage.

``prometheus_tools`` finds ``prometheus`` and ``promtool``; when they are missing
and the tests run as root (CI machines), it installs the Debian package the way
the Makefile's ``prometheus`` prerequisite does, and skips with the reason only
when that is impossible.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self, TypeVar

import pytest

from hopindex.testing.redis_server import free_port
from tests.waiting import wait_until

PACKAGE = "prometheus"
INSTALL_TIMEOUT_S = 900.0
START_TIMEOUT_S = 30.0


T = TypeVar("T")

@dataclass(frozen=True)
class PrometheusTools:
    prometheus: str
    promtool: str

    def promtool_run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.promtool, *args], capture_output=True, text=True,
                              cwd=cwd, timeout=60, check=False)


def _found() -> PrometheusTools | None:
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    return PrometheusTools(prometheus, promtool) if prometheus and promtool else None


def install_package(package: str) -> str:
    """Install Debian's ``package``; '' on success, else why it could not be done."""
    if os.geteuid() != 0:
        return "not root, so the Debian package cannot be installed here"
    if shutil.which("apt-get") is None:
        return "no apt-get to install the Debian package with"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-q"],
                 ["apt-get", "install", "-y", "-q", "--no-install-recommends", package]):
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env=env,
                                  timeout=INSTALL_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{' '.join(argv)} failed: {exc}"
        if done.returncode != 0:
            return f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-500:]}"
    return ""


def tools_or_skip(find: Callable[[], T | None], package: str, binaries: str) -> T:
    """What ``find`` finds, Debian's ``package`` installed first when it finds nothing;
    skips the test with the reason when it still finds nothing."""
    tools = find()
    if tools is None:
        reason = install_package(package)
        tools = find()
        if tools is None:
            pytest.skip(f"{binaries} (Debian package {package!r}) not installed: "
                        f"{reason or 'installed, yet not on PATH'}")
    return tools


def prometheus_tools() -> PrometheusTools:
    """The binaries, installed when missing; skips the test with the reason otherwise."""
    return tools_or_skip(_found, PACKAGE, "prometheus/promtool")


class ServerProcess:
    """A server binary run on loopback for a test, its output in a log file: stopped
    with SIGTERM (SIGKILL after 10 s) when the ``with`` block ends."""

    process: subprocess.Popen[bytes]
    _log: IO[bytes]
    url: str
    log_path: Path

    def _ready_or_exited(self) -> str:
        """"ready" once ``/-/ready`` answers 200, "exited" once the process has ended,
        else "" (not yet)."""
        if self.process.poll() is not None:
            return "exited"
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as answer:
                return "ready" if answer.status == 200 else ""
        except (urllib.error.URLError, OSError):
            return ""

    def _wait_ready(self, name: str, timeout_s: float) -> None:
        """Return once the server answers ready; RuntimeError with its log if it exits
        first or does not answer within ``timeout_s``."""
        try:
            state = wait_until(self._ready_or_exited, what=f"{name} to answer /-/ready",
                               timeout_s=timeout_s, interval_s=0.1)
        except AssertionError:
            state = "timed out"
        if state != "ready":
            raise RuntimeError(f"{name} did not start; its log:\n"
                               f"{self.log_path.read_text(errors='replace')[-3000:]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class PrometheusServer(ServerProcess):
    """``prometheus`` scraping ``targets`` (job name → host:port list) every
    ``scrape_interval_s``, or running the config file ``config_path`` when given;
    listening on a free loopback port, storing in ``tmp``."""

    def __init__(self, tools: PrometheusTools, tmp: Path,
                 targets: Mapping[str, Sequence[str]] | None = None, *,
                 scrape_interval_s: float = 1.0, config_path: Path | None = None) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        if config_path is None:
            interval = f"{round(scrape_interval_s * 1000)}ms"
            config = {
                "global": {"scrape_interval": interval, "scrape_timeout": interval},
                "scrape_configs": [
                    {"job_name": job, "static_configs": [{"targets": list(hosts)}]}
                    for job, hosts in (targets or {}).items()],
            }
            # JSON is YAML: no YAML library needed to write the config.
            config_path = tmp / "prometheus.yml"
            config_path.write_text(json.dumps(config, indent=2))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp / "prometheus.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [tools.prometheus, f"--config.file={config_path}",
             f"--storage.tsdb.path={tmp / 'data'}", "--storage.tsdb.retention.time=1h",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self._log, stderr=subprocess.STDOUT)
        try:
            self._wait_ready("prometheus", START_TIMEOUT_S)
        except BaseException:
            self.stop()
            raise

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector ``expr`` evaluates to now (Prometheus's HTTP API)."""
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
        with urllib.request.urlopen(url, timeout=5) as answer:
            body = json.load(answer)
        if body.get("status") != "success":
            raise RuntimeError(f"query {expr!r} failed: {body}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def value(self, expr: str) -> float | None:
        """The one sample ``expr`` gives, or None when it gives none."""
        result = self.query(expr)
        if not result:
            return None
        if len(result) > 1:
            raise AssertionError(f"{expr!r} gave {len(result)} series, expected one: {result}")
        return float(result[0]["value"][1])

    def wait_for(self, expr: str, ready: Callable[[float | None], bool], *,
                 timeout_s: float = 20.0) -> float | None:
        """Poll ``expr`` until ``ready(value)``; fails with the last value seen."""
        seen: list[float | None] = []

        def reached() -> tuple[float | None, ...]:
            seen[:] = [self.value(expr)]
            # Boxed: the value itself may be None or 0.0 when it is the one awaited.
            return (seen[0],) if ready(seen[0]) else ()

        try:
            return wait_until(reached, what=f"{expr!r} to be ready", timeout_s=timeout_s,
                              interval_s=0.2)[0]
        except AssertionError as exc:
            raise AssertionError(f"{expr!r} stayed at {seen[0]} for {timeout_s} s") from exc


