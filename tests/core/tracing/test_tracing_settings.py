"""The OTEL_* variables: off unless an exporter is named, and every value the SDK would
ignore with a warning refused naming its variable."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from hopindex.core.errors import ConfigError
from hopindex.core.tracing.settings import SamplerName, TracesExporter, TracingSettings


def test_off_by_default_and_when_disabled() -> None:
    assert not TracingSettings.from_env({}).enabled
    assert not TracingSettings.from_env({"OTEL_TRACES_EXPORTER": "none"}).enabled
    assert not TracingSettings.from_env({"OTEL_TRACES_EXPORTER": "otlp",
                                         "OTEL_SDK_DISABLED": "true"}).enabled


def test_the_standard_variables_are_read() -> None:
    settings = TracingSettings.from_env({
        "OTEL_TRACES_EXPORTER": "OTLP", "OTEL_SERVICE_NAME": "api-1",
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})
    assert settings.exporter is TracesExporter.OTLP and settings.enabled
    assert settings.service_name == "api-1"
    assert settings.sampler is SamplerName.PARENT_TRACE_ID_RATIO
    assert settings.sampler_ratio == 0.25


@pytest.mark.parametrize(("env", "named"), [
    ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"),
    ({"OTEL_TRACES_EXPORTER": "otlp,console"}, "OTEL_TRACES_EXPORTER"),
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "sometimes"},
     "OTEL_TRACES_SAMPLER"),
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "traceidratio",
      "OTEL_TRACES_SAMPLER_ARG": "half"}, "OTEL_TRACES_SAMPLER_ARG"),
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "traceidratio",
      "OTEL_TRACES_SAMPLER_ARG": "2"}, "OTEL_TRACES_SAMPLER_ARG"),
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
     "OTEL_EXPORTER_OTLP_PROTOCOL"),
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"},
     "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
])
def test_a_value_the_sdk_would_ignore_is_refused_by_name(env: dict[str, str],
                                                          named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        TracingSettings.from_env(env)


def test_tracing_off_imports_nothing_of_opentelemetry() -> None:
    """A process that sets its logging up with no OTEL_* variable, opens spans, reads
    the current ids and sends a request's headers has not imported OpenTelemetry."""
    code = textwrap.dedent("""
        import os, sys
        for name in [n for n in os.environ if n.startswith("OTEL_")]:
            del os.environ[name]
        from hopindex.core.logging import configure_logging
        from hopindex.core.settings import Settings
        from hopindex.core.tracing import current_ids, span
        from hopindex.core.tracing.propagation import current_carrier
        configure_logging(Settings())
        with span("work") as work:
            assert not work.is_recording() and current_ids() is None
            assert current_carrier() == {}
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stdout
