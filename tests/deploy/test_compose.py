"""docker-compose.yml, .env.example and the Dockerfile describe a stack hopindex can run.

Debian's ``docker-compose config`` validates and resolves the file (no Docker
engine needed); the resolved services are then checked against hopindex itself:
every HOPINDEX_* variable is a setting it reads (and parses), every command is a
``hopindex`` subcommand with flags it accepts, every queue has a worker, the
Prometheus config scrapes the services the file defines and alerts its Alertmanager,
every hopindex service sends its traces to the stack's Jaeger and nowhere else, and
nothing secret has a default.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
import opentelemetry.environment_variables
import opentelemetry.sdk.environment_variables
import pytest
import yaml

from hopindex.api.cli import main
from hopindex.core.settings import Settings
from hopindex.core.tracing.settings import (
    OTLP_PROTOCOL,
    SamplerName,
    TracesExporter,
    TracingSettings,
)
from hopindex.workers.launch import parse_queues
from hopindex.workers.queues import Queue

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
SETTING_NAMES = {f"HOPINDEX_{f.name.upper()}" for f in fields(Settings)}
# Valid values for the variables the example leaves for the user to set.
REQUIRED = {"HOPINDEX_API_KEYS": "compose-test-key-0123456789:write",
            "GRAFANA_ADMIN_PASSWORD": "compose-test-grafana-password",
            "ALERTMANAGER_WEBHOOK_URL": "https://hooks.example.com/hopindex?channel=ops"}
EXPECTED_SERVICES = {"redis", "qdrant", "elasticsearch", "api", "worker-stage1",
                     "worker-stage2", "worker-embed", "worker-judge", "worker-control",
                     "worker-webhooks", "beat",
                     "prometheus", "alertmanager", "grafana", "jaeger"}
MONITORING = ROOT / "hopindex" / "monitoring"
# The trace backend: its service, and the port it takes OTLP over HTTP on (the one
# protocol hopindex exports).
TRACES = "jaeger"
OTLP_HTTP_PORT = 4318
# The OTEL_* variables the OpenTelemetry SDK (and hopindex, core/tracing/settings.py) reads.
OTEL_NAMES = {value for module in (opentelemetry.environment_variables,
                                   opentelemetry.sdk.environment_variables)
              for name, value in vars(module).items()
              if name.startswith("OTEL_") and isinstance(value, str)}


def _install_docker_compose() -> str | None:
    """The docker-compose binary, installing Debian's package when missing (as root;
    without its recommended Docker engine, which `config` does not need)."""
    found = shutil.which("docker-compose")
    if found or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return found
    for command in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "--no-install-recommends",
                     "docker-compose"]):
        subprocess.run(command, check=False, capture_output=True, timeout=600,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    return shutil.which("docker-compose")


@pytest.fixture(scope="module")
def docker_compose() -> str:
    binary = _install_docker_compose()
    if binary is None:
        pytest.skip("docker-compose is not installed and could not be installed (needs root "
                    "and apt-get: `apt-get install docker-compose`, or `make docker-compose`)")
    return binary


def compose_config(binary: str, **env: str) -> subprocess.CompletedProcess[str]:
    # The caller's own settings would win over .env.example: left out.
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HOPINDEX_", "OTEL_"))}
    return subprocess.run([binary, "--env-file", str(ENV_EXAMPLE), "config"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**clean, **env})


@pytest.fixture(scope="module")
def resolved(docker_compose: str) -> dict[str, Any]:
    done = compose_config(docker_compose, **REQUIRED)
    assert done.returncode == 0, done.stderr
    config: dict[str, Any] = yaml.safe_load(done.stdout)
    return config


def hopindex_services(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: service for name, service in config["services"].items()
            if service.get("command", [None])[0] == "hopindex"}


def environment(service: dict[str, Any]) -> dict[str, str]:
    return {k: "" if v is None else str(v)
            for k, v in (service.get("environment") or {}).items()}


def traces_endpoint(env: dict[str, str]) -> str:
    """Where the OTLP/HTTP exporter posts spans under ``env``: the traces endpoint as
    given, else the base endpoint with the signal's path (the specification's rule)."""
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")
    assert base, "no OTLP endpoint: the exporter would post to its localhost default"
    return base.rstrip("/") + "/v1/traces"


def published(service: dict[str, Any]) -> dict[int, str]:
    """Container port -> the host address it is published on ("" for every address)."""
    found: dict[int, str] = {}
    for port in service.get("ports", []):
        if isinstance(port, dict):
            found[int(port["target"])] = str(port.get("host_ip") or "")
            continue
        parts = str(port).split("/")[0].split(":")
        found[int(parts[-1])] = parts[0] if len(parts) == 3 else ""
    return found


def test_docker_compose_config_accepts_the_file(resolved: dict[str, Any]) -> None:
    """`docker-compose config` resolves the file with .env.example; every service of the
    stack is there with a memory limit, and the data services have healthchecks."""
    services = resolved["services"]
    assert set(services) == EXPECTED_SERVICES
    for name, service in services.items():
        assert service.get("mem_limit"), f"{name} has no memory limit"
    for name in ("redis", "qdrant", "elasticsearch", "api", "worker-embed"):
        assert services[name]["healthcheck"]["test"], name
    for name, service in hopindex_services(resolved).items():
        assert service["depends_on"]["elasticsearch"]["condition"] == "service_healthy", name


@pytest.mark.parametrize("missing", sorted(REQUIRED))
def test_a_missing_required_variable_stops_the_stack_with_the_reason(
        docker_compose: str, missing: str) -> None:
    """API keys (the API listens beyond loopback), Grafana's admin password (no default
    `admin`) and the alert webhook have no defaults: without one the stack refuses to
    start, naming it; .env.example leaves all three empty for the user to fill in."""
    done = compose_config(docker_compose,
                          **{k: v for k, v in REQUIRED.items() if k != missing})
    assert done.returncode != 0
    assert f"set {missing} in .env" in done.stdout + done.stderr
    example = dict(line.split("=", 1) for line in ENV_EXAMPLE.read_text().splitlines()
                   if "=" in line and not line.lstrip().startswith("#"))
    assert example[missing] == ""


def test_every_hopindex_variable_is_a_setting_it_reads(resolved: dict[str, Any]) -> None:
    """Each service's HOPINDEX_* variables name Settings fields and parse and validate
    as hopindex reads them; they point at the servers, never at embedded engines."""
    services = hopindex_services(resolved)
    assert len(services) == 8
    for name, service in services.items():
        env = {k: str(v) for k, v in service["environment"].items()}
        unknown = {k for k in env if k.startswith("HOPINDEX_")} - SETTING_NAMES
        assert not unknown, f"{name} sets variables hopindex does not read: {unknown}"
        settings = Settings.from_env(env)
        assert settings.vector_url.startswith("qdrant://"), name
        assert settings.keyword_url.startswith("elasticsearch://"), name
        assert settings.state_url.startswith("redis://"), name
        assert settings.broker_url.startswith("redis://"), name


def test_env_example_lists_exactly_what_compose_reads() -> None:
    """Every ${VAR} the compose file interpolates is in .env.example, every variable
    there is used, and the HOPINDEX_* ones are settings hopindex reads."""
    interpolated = set(re.findall(r"\$\{([A-Z0-9_]+)", COMPOSE.read_text()))
    example = {line.split("=", 1)[0].strip()
               for line in ENV_EXAMPLE.read_text().splitlines()
               if line.strip() and not line.lstrip().startswith("#")}
    assert interpolated == example
    assert {k for k in example if k.startswith("HOPINDEX_")} <= SETTING_NAMES


def test_service_commands_are_hopindex_subcommands_with_real_flags(
        resolved: dict[str, Any]) -> None:
    """Each command parses as the hopindex CLI would parse it (unknown subcommands or
    flags, or bad values, fail here), and its flags appear in the subcommand's help."""
    from click.testing import CliRunner

    runner = CliRunner()
    for name, service in hopindex_services(resolved).items():
        args = [str(a) for a in service["command"][1:]]
        with click.Context(main) as ctx:
            command = main.get_command(ctx, args[0])
        assert command is not None, f"{name}: no `hopindex {args[0]}`"
        parsed = command.make_context(args[0], args[1:], parent=click.Context(main))
        helped = runner.invoke(main, [args[0], "--help"])
        assert helped.exit_code == 0, helped.output
        for flag in (a for a in args[1:] if a.startswith("--")):
            assert flag in helped.output, f"{name}: {flag} is not an option of {args[0]}"
        if args[0] == "worker":
            assert parsed.params["metrics_port"] == 9100, name
            parse_queues(parsed.params["queues"])


def test_every_queue_has_its_worker_service(resolved: dict[str, Any]) -> None:
    """worker-<queue> takes exactly <queue>, so each stage scales on its own."""
    taken: list[str] = []
    for name, service in hopindex_services(resolved).items():
        command = [str(a) for a in service["command"]]
        if command[1] == "worker":
            queues = command[command.index("--queues") + 1]
            assert name == f"worker-{queues}", name
            taken.append(queues)
    assert sorted(taken) == sorted(q.value for q in Queue)


def test_monitoring_is_provisioned_from_the_repository(resolved: dict[str, Any]) -> None:
    """Prometheus and Grafana mount hopindex/monitoring/; Prometheus scrapes the API and
    every worker service by its compose name, on the ports they serve metrics on."""
    services = resolved["services"]
    mounts = {service: [v["source"] if isinstance(v, dict) else v.split(":")[0]
                        for v in services[service]["volumes"]]
              for service in ("prometheus", "alertmanager", "grafana")}
    prometheus_dir = MONITORING / "prometheus"
    assert str(prometheus_dir) in mounts["prometheus"]
    assert str(MONITORING / "alertmanager") in mounts["alertmanager"]
    assert str(MONITORING / "grafana" / "provisioning") in mounts["grafana"]
    scrape = yaml.safe_load((prometheus_dir / "prometheus.yml").read_text())
    targets = {(name, sd["port"]) for job in scrape["scrape_configs"]
               for sd in job.get("dns_sd_configs", []) for name in sd["names"]}
    workers = {name for name in services if name.startswith("worker-")}
    assert targets == {("api", 8080), *((name, 9100) for name in workers)}


def _container_path(service: dict[str, Any], host_dir: Path) -> str:
    """Where ``service`` mounts ``host_dir``."""
    for volume in service["volumes"]:
        source, target = ((volume["source"], volume["target"]) if isinstance(volume, dict)
                          else volume.split(":")[:2])
        if source == str(host_dir):
            return str(target)
    raise AssertionError(f"{host_dir} is not mounted")


def test_alertmanager_renders_the_shipped_template_and_prometheus_reaches_it(
        resolved: dict[str, Any]) -> None:
    """The alertmanager service runs render-config.sh on the mounted template (the webhook
    URL from its environment) and then Alertmanager on the result; Prometheus alerts
    the service on the port it listens on."""
    services = resolved["services"]
    alertmanager = services["alertmanager"]
    mounted = _container_path(alertmanager, MONITORING / "alertmanager")
    script = " ".join(alertmanager["entrypoint"])
    assert f"sh {mounted}/render-config.sh {mounted}/alertmanager.yml.tmpl " in script
    assert (MONITORING / "alertmanager" / "render-config.sh").is_file()
    assert (MONITORING / "alertmanager" / "alertmanager.yml.tmpl").is_file()
    rendered = re.search(r"render-config\.sh \S+ (\S+) && exec /bin/alertmanager "
                         r"--config\.file=(\S+)", script)
    assert rendered is not None and rendered.group(1) == rendered.group(2), script
    assert alertmanager["environment"]["ALERTMANAGER_WEBHOOK_URL"] == (
        REQUIRED["ALERTMANAGER_WEBHOOK_URL"])
    assert any(str(p).split(":")[-1].startswith("9093") or
               (isinstance(p, dict) and p.get("target") == 9093)
               for p in alertmanager["ports"])
    config = yaml.safe_load((MONITORING / "prometheus" / "prometheus.yml").read_text())
    targets = [t for manager in config["alerting"]["alertmanagers"]
               for static in manager["static_configs"] for t in static["targets"]]
    assert targets == ["alertmanager:9093"]
    assert "alertmanager" in services["prometheus"]["depends_on"]


def test_grafana_takes_its_admin_password_from_the_environment(
        resolved: dict[str, Any]) -> None:
    """No default password: Grafana's admin password is the one the user set."""
    grafana = resolved["services"]["grafana"]
    assert grafana["environment"]["GF_SECURITY_ADMIN_PASSWORD"] == (
        REQUIRED["GRAFANA_ADMIN_PASSWORD"])
    assert "GRAFANA_ADMIN_PASSWORD:-" not in COMPOSE.read_text()


def test_dockerfile_is_slim_non_root_with_cpu_torch() -> None:
    """Python 3.11 slim, the CPU torch wheel pinned like the Makefile's, a non-root user;
    the build context leaves out the virtualenv, git and tests."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\b", dockerfile, re.M)
    torch = re.search(r"^TORCH := (\S+)", makefile, re.M)
    assert torch is not None
    assert (f"pip install {torch.group(1)} --index-url https://download.pytorch.org/whl/cpu"
            in dockerfile)
    users = re.findall(r"^USER (\S+)", dockerfile, re.M)
    assert users and users[-1] not in ("root", "0")
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".venv", ".git", "tests", ".env"} <= set(ignored)


def test_the_trace_backend_takes_otlp_over_http_and_serves_its_ui_on_loopback(
        resolved: dict[str, Any]) -> None:
    """Jaeger v2 (pinned, the tag .env.example names too) with a memory limit and a cap
    on the traces it keeps in memory, a healthcheck on its collector's health endpoint,
    its UI and OTLP/HTTP port published on loopback only, like the other UIs."""
    jaeger = resolved["services"][TRACES]
    assert re.fullmatch(r"jaegertracing/jaeger:2\.\d+\.\d+", jaeger["image"]), jaeger["image"]
    assert any(line == f"IMAGE_JAEGER={jaeger['image']}"
               for line in ENV_EXAMPLE.read_text().splitlines())
    assert jaeger["mem_limit"]
    kept = [a for a in jaeger["command"] if ".memory.max_traces=" in str(a)]
    assert len(kept) == 1 and 0 < int(str(kept[0]).rsplit("=", 1)[1]) < 100_000, kept
    assert "http://127.0.0.1:13133/status" in jaeger["healthcheck"]["test"]
    ports = published(jaeger)
    assert ports == {16686: "127.0.0.1", OTLP_HTTP_PORT: "127.0.0.1"}, ports
    assert published(resolved["services"]["grafana"]) == {3000: "127.0.0.1"}


def test_every_hopindex_service_sends_its_traces_to_the_stacks_jaeger(
        resolved: dict[str, Any]) -> None:
    """Each hopindex service exports over OTLP/HTTP (the one protocol hopindex sends) to
    the trace backend's port 4318, under a service name of its own; its OTEL_* variables
    are ones the SDK reads and parse as hopindex reads them."""
    services = hopindex_services(resolved)
    assert len(services) == 8
    names = set()
    for name, service in services.items():
        env = environment(service)
        unknown = {k for k in env if k.startswith("OTEL_")} - OTEL_NAMES
        assert not unknown, f"{name} sets variables the SDK does not read: {unknown}"
        settings = TracingSettings.from_env(env)
        assert settings.exporter is TracesExporter.OTLP, name
        assert settings.sampler is SamplerName.PARENT_ALWAYS_ON, name
        assert settings.service_name == f"hopindex-{name}", name
        names.add(settings.service_name)
        for protocol in ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"):
            assert env.get(protocol, OTLP_PROTOCOL) == OTLP_PROTOCOL, name
        endpoint = urlsplit(traces_endpoint(env))
        assert (endpoint.scheme, endpoint.hostname, endpoint.port, endpoint.path) == (
            "http", TRACES, OTLP_HTTP_PORT, "/v1/traces"), f"{name}: {endpoint.geturl()}"
    assert len(names) == len(services)


def test_no_service_sends_telemetry_off_the_compose_network(
        resolved: dict[str, Any]) -> None:
    """Every OTLP endpoint any service is given (traces, metrics or logs) names a service
    of this file over plain HTTP on the compose network: not a host outside it, not
    localhost (inside a container, the container itself). Every hopindex service has
    one, so none falls back to the exporter's localhost default."""
    services = resolved["services"]
    endpoints = {(name, key): value for name, service in services.items()
                 for key, value in environment(service).items()
                 if key.startswith("OTEL_EXPORTER_OTLP") and key.endswith("ENDPOINT")}
    assert {name for name, _ in endpoints} == set(hopindex_services(resolved))
    for (name, key), value in endpoints.items():
        endpoint = urlsplit(value)
        assert endpoint.hostname in services, f"{name}: {key}={value} is off the stack"
        assert endpoint.scheme == "http", f"{name}: {key}={value}"


def test_each_service_is_one_resource_its_replicas_tell_apart(
        resolved: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The resource each process's spans carry, as the SDK builds it from the service's
    variables: its service name, the stack's namespace, and host.name (a replica's
    container) beside the per-process service.instance.id."""
    from opentelemetry.sdk.resources import Resource

    for name, service in hopindex_services(resolved).items():
        with monkeypatch.context() as patched:
            for key in [k for k in os.environ if k.startswith("OTEL_")]:
                patched.delenv(key)
            for key, value in environment(service).items():
                if key.startswith("OTEL_"):
                    patched.setenv(key, value)
            settings = TracingSettings.from_env()
            attributes = Resource.create({"service.name": settings.service_name}).attributes
        assert attributes["service.name"] == f"hopindex-{name}"
        assert attributes["service.namespace"] == "hopindex", name
        assert attributes.get("host.name"), name
        assert attributes.get("service.instance.id"), name


@pytest.mark.parametrize(("variables", "expected"), [
    ({"OTEL_TRACES_EXPORTER": "none"}, TracingSettings()),
    ({"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"},
     TracingSettings(exporter=TracesExporter.OTLP,
                     sampler=SamplerName.PARENT_TRACE_ID_RATIO, sampler_ratio=0.1)),
])
def test_env_turns_traces_off_or_samples_them(
        docker_compose: str, variables: dict[str, str], expected: TracingSettings) -> None:
    """What .env sets reaches every hopindex service: none turns tracing off, a sampler
    and its ratio apply everywhere."""
    done = compose_config(docker_compose, **REQUIRED, **variables)
    assert done.returncode == 0, done.stderr
    for name, service in hopindex_services(yaml.safe_load(done.stdout)).items():
        settings = TracingSettings.from_env(environment(service))
        assert settings.enabled is expected.enabled, name
        assert (settings.exporter, settings.sampler, settings.sampler_ratio) == (
            expected.exporter, expected.sampler, expected.sampler_ratio), name


def test_prometheus_keeps_the_exemplars_that_lead_to_traces(
        resolved: dict[str, Any]) -> None:
    """Histogram exemplars (trace ids) are stored only with Prometheus's exemplar
    storage on; without it an OpenMetrics scrape drops them."""
    assert "--enable-feature=exemplar-storage" in resolved["services"]["prometheus"]["command"]


def test_the_image_installs_the_otlp_exporter_the_stack_turns_on() -> None:
    """The stack exports traces by default, so the image has the SDK and its OTLP/HTTP
    exporter: required dependencies of the project, or an extra the Dockerfile installs.
    Without them every hopindex service would fail to start."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = set(re.findall(r"pip install [^\n]*?\.\[([\w,-]+)\]",
                            (ROOT / "Dockerfile").read_text()))
    installed = list(project["dependencies"]) + [
        dependency for group in extras for extra in group.split(",")
        for dependency in project.get("optional-dependencies", {}).get(extra, [])]
    names = {re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0].lower().replace("_", "-")
             for d in installed}
    missing = {"opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http"} - names
    assert not missing, f"the image would not install {sorted(missing)}"


def test_env_example_pins_the_images_compose_defaults_to() -> None:
    """Each IMAGE_* of .env.example is the image the compose file uses without it."""
    defaults = dict(re.findall(r"\$\{(IMAGE_[A-Z0-9_]+):-([^}]+)\}", COMPOSE.read_text()))
    example = dict(line.split("=", 1) for line in ENV_EXAMPLE.read_text().splitlines()
                   if line.startswith("IMAGE_"))
    assert defaults == example
