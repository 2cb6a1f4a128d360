"""structlog configuration: events with keys, not sentences."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

from hopindex.core.redact import redact_values
from hopindex.core.settings import Settings


def configure_logging(settings: Settings) -> None:
    level = logging.getLevelNamesMapping().get(settings.log_level.upper(), logging.WARNING)
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if settings.log_format == "json"
        # Plain tracebacks: rich's would print each frame's local variables, and a
        # local may hold an API key or a provider secret.
        else structlog.dev.ConsoleRenderer(colors=False,
                                           exception_formatter=structlog.dev.plain_traceback)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            _redact,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def _redact(_logger: object, _method: str, event: MutableMapping[str, Any]
            ) -> MutableMapping[str, Any]:
    """Every value of every log event with URL credentials redacted: errors quote URLs
    (an LLM base URL, a broker, a webhook) and logs are read by more people than
    settings are."""
    for key, value in event.items():
        if isinstance(value, str | dict | list | tuple):
            event[key] = redact_values(value)
    return event


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    logger: structlog.stdlib.BoundLogger = structlog.get_logger(name)
    return logger
