"""structlog configuration: events with keys, not sentences."""

from __future__ import annotations

import logging
import sys

import structlog

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
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    logger: structlog.stdlib.BoundLogger = structlog.get_logger(name)
    return logger
