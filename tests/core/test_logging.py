"""Logged tracebacks show where an error came from, never the values of local variables."""

from __future__ import annotations

import pytest
import structlog

from hopindex.core.logging import configure_logging, get_logger
from hopindex.core.settings import Settings


def test_a_logged_traceback_prints_no_local_variables(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """A secret held in a local of the failing frame stays out of the console log,
    while the traceback itself (the error and its frame) is still there."""
    previous = structlog.get_config()
    configure_logging(Settings(log_level="INFO"))
    log = get_logger(__name__)

    def call_provider() -> None:
        api_key = "sk-never-in-a-log"  # noqa: F841  # the local the renderer must not show
        raise ValueError("provider refused")

    try:
        call_provider()
    except ValueError:
        log.error("call_failed", exc_info=True)
    finally:
        # The logger writes to this test's captured stderr, closed once it ends.
        structlog.configure(**previous)
    err = capsys.readouterr().err
    assert "ValueError: provider refused" in err and "call_provider" in err
    assert "sk-never-in-a-log" not in err
