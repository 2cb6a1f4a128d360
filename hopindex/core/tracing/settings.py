"""What the standard ``OTEL_*`` variables ask of tracing, read once into a frozen object.

Tracing is off unless ``OTEL_TRACES_EXPORTER`` names an exporter (``otlp`` or
``console``), or ``OTEL_SDK_DISABLED`` is true. The OTLP exporter reads its own
variables (endpoint, headers, timeout, compression) as the OpenTelemetry specification
defines them; what is checked here is what the SDK would otherwise ignore with a
warning on stderr: an exporter or sampler it does not know, a protocol not installed,
a sampler argument that is not a number. Each is refused naming the variable.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from hopindex.core.errors import ConfigError

DEFAULT_SERVICE_NAME = "hopindex"
# The one OTLP protocol installed: the HTTP exporter brings no gRPC stack of its own.
OTLP_PROTOCOL = "http/protobuf"

E = TypeVar("E", bound=enum.StrEnum)


class TracesExporter(enum.StrEnum):
    NONE = "none"
    OTLP = "otlp"
    CONSOLE = "console"


class SamplerName(enum.StrEnum):
    """The specification's samplers (``OTEL_TRACES_SAMPLER``)."""

    ALWAYS_ON = "always_on"
    ALWAYS_OFF = "always_off"
    TRACE_ID_RATIO = "traceidratio"
    PARENT_ALWAYS_ON = "parentbased_always_on"
    PARENT_ALWAYS_OFF = "parentbased_always_off"
    PARENT_TRACE_ID_RATIO = "parentbased_traceidratio"


@dataclass(frozen=True, slots=True)
class TracingSettings:
    exporter: TracesExporter = TracesExporter.NONE
    service_name: str = DEFAULT_SERVICE_NAME
    sampler: SamplerName = SamplerName.PARENT_ALWAYS_ON
    # The ratio of the trace-id ratio samplers; ignored by the others.
    sampler_ratio: float = 1.0
    # How long a process's exit waits for its last spans to go out: a collector that
    # does not answer must not hold a CLI command open for the SDK's 30 s.
    exit_flush_s: float = 2.0

    @property
    def enabled(self) -> bool:
        return self.exporter is not TracesExporter.NONE

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TracingSettings:
        env = os.environ if environ is None else environ
        if _flag(env, "OTEL_SDK_DISABLED"):
            return cls()
        exporter = _exporter(env)
        if exporter is TracesExporter.NONE:
            return cls()
        if exporter is TracesExporter.OTLP:
            for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
                protocol = env.get(name, "").strip()
                if protocol and protocol != OTLP_PROTOCOL:
                    raise ConfigError(f"{name}={protocol!r}: hopindex exports OTLP over "
                                      f"{OTLP_PROTOCOL} only (a collector's port 4318)")
                if protocol:
                    break
        sampler = _choice(env, "OTEL_TRACES_SAMPLER", SamplerName,
                          SamplerName.PARENT_ALWAYS_ON)
        ratio = 1.0
        if sampler in (SamplerName.TRACE_ID_RATIO, SamplerName.PARENT_TRACE_ID_RATIO):
            raw = env.get("OTEL_TRACES_SAMPLER_ARG", "").strip()
            try:
                ratio = float(raw) if raw else 1.0
            except ValueError:
                raise ConfigError(f"OTEL_TRACES_SAMPLER_ARG={raw!r} must be a number from "
                                  "0 to 1 (the share of traces kept)") from None
            if not 0.0 <= ratio <= 1.0:
                raise ConfigError(f"OTEL_TRACES_SAMPLER_ARG={raw!r} must be from 0 to 1")
        service = env.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_SERVICE_NAME
        return cls(exporter=exporter, service_name=service, sampler=sampler,
                   sampler_ratio=ratio)


def _exporter(env: Mapping[str, str]) -> TracesExporter:
    raw = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if not raw:
        return TracesExporter.NONE
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if len(names) > 1:
        raise ConfigError(f"OTEL_TRACES_EXPORTER={raw!r}: name one exporter "
                          f"({', '.join(e.value for e in TracesExporter)})")
    return _parse(names[0], "OTEL_TRACES_EXPORTER", TracesExporter)


def _choice(env: Mapping[str, str], name: str, kind: type[E], default: E) -> E:
    raw = env.get(name, "").strip().lower()
    return _parse(raw, name, kind) if raw else default


def _parse(raw: str, name: str, kind: type[E]) -> E:
    try:
        return kind(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not one of "
                          f"{', '.join(k.value for k in kind)}") from None


def _flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() == "true"
