"""Logged tracebacks show where an error came from, never the values of local variables;
with the JSON format every line a process writes on stderr is one JSON record."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from hopindex.core.logging import OWN_LOGGER, PROCESS_LOGGERS, configure_logging, get_logger
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


REQUIRED_KEYS = {"timestamp", "level", "logger", "event"}


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """Logging as it was before the test: its handler writes to this test's captured
    stderr, and its levels would hold for the tests after it."""
    structlog_config = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    own = {name: logging.getLogger(name).level for name in (OWN_LOGGER, *PROCESS_LOGGERS)}
    yield
    structlog.configure(**structlog_config)
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, was in own.items():
        logging.getLogger(name).setLevel(was)


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every non-empty line of ``text`` as a JSON object holding the four keys."""
    records = []
    for line in text.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)  # fails the test on a line that is not JSON
        assert isinstance(record, dict) and record.keys() >= REQUIRED_KEYS, line
        records.append(record)
    return records


@pytest.mark.usefixtures("restored_logging")
def test_json_renders_hopindex_events_and_library_records_alike(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A structlog event and a standard-library record (as Celery logs a failed task)
    each come out as one JSON line with timestamp, level, logger and event; the
    traceback is the ``exception`` string inside its record, redacted like the rest."""
    configure_logging(Settings(log_level="INFO", log_format="json"))
    get_logger("hopindex.workers.test").info("task_started", broker="redis://u:pw@h:6379/0")
    try:
        raise ValueError("cannot reach redis://u:pw@h:6379/0")
    except ValueError:
        logging.getLogger("celery.app.trace").error("Task %s raised unexpected", "t1",
                                                   exc_info=True)
    records = json_lines(capsys.readouterr().err)
    assert [(r["logger"], r["level"], r["event"]) for r in records] == [
        ("hopindex.workers.test", "info", "task_started"),
        ("celery.app.trace", "error", "Task t1 raised unexpected")]
    assert records[0]["broker"] == "redis://***@h:6379/0"
    exception = records[1]["exception"]
    assert exception.startswith("Traceback (most recent call last)")
    assert "ValueError: cannot reach redis://***@h:6379/0" in exception
    assert "pw@" not in exception


@pytest.mark.usefixtures("restored_logging")
def test_libraries_speak_from_warning_up_and_hopindex_at_the_level(
        capsys: pytest.CaptureFixture[str]) -> None:
    """At INFO, hopindex's info events show; an HTTP client's info records do not (it
    would log every LLM request) while its warnings do, and in a command (not a worker)
    Celery's per-task info records stay out too."""
    configure_logging(Settings(log_level="INFO", log_format="json"))
    get_logger("hopindex.api").info("index_opened")
    get_logger("hopindex.api").debug("below_the_level")
    logging.getLogger("celery.app.trace").info("Task t1 succeeded")
    logging.getLogger("httpx").info("HTTP Request: POST /v1/chat/completions")
    logging.getLogger("httpx").warning("connection pool is full")
    records = json_lines(capsys.readouterr().err)
    assert [(r["logger"], r["event"]) for r in records] == [
        ("hopindex.api", "index_opened"), ("httpx", "connection pool is full")]


PROCESS_SCRIPT = """
import logging, sys, threading, warnings
import click
from hopindex.core.logging import configure_process_logging
from hopindex.core.settings import Settings

configure_process_logging(Settings(log_format="json", log_level="info"))
logging.getLogger("celery.worker.strategy").info("Task received")
logging.getLogger("httpx").info("HTTP Request: POST /v1/chat/completions")
print("printed", "words")
click.echo("an error line", err=True)
sys.stderr.write("first line\\nsecond line\\n")
warnings.warn("a library warns")
thread = threading.Thread(target=lambda: 1 / 0, name="side")
thread.start()
thread.join()
raise RuntimeError("the process fails")
"""


def test_a_json_process_writes_nothing_but_json_records_on_stderr() -> None:
    """Once a process's JSON logging is set up, prints, stderr writes, warnings and
    uncaught exceptions (main thread and others) are records too: every stderr line
    is one JSON object, a multi-line write stays one record, and a traceback is inside
    its record rather than spread over lines. Celery's info records are the process's
    own there; an HTTP client's are not."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOPINDEX_")}
    done = subprocess.run([sys.executable, "-c", PROCESS_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert done.stdout == ""
    records = json_lines(done.stderr)
    events = {(r["logger"], r["event"]) for r in records}
    assert {("stdout", "printed words"), ("stderr", "an error line"),
            ("stderr", "first line\nsecond line"),
            ("celery.worker.strategy", "Task received")} <= events
    assert not any(r["logger"] == "httpx" for r in records)
    assert any(r["logger"] == "py.warnings" and "a library warns" in r["event"]
               for r in records)
    uncaught = [r for r in records if r["event"] == "uncaught_exception"]
    assert [r.get("thread") for r in uncaught] == ["side", None]
    assert "ZeroDivisionError" in uncaught[0]["exception"]
    assert uncaught[1]["level"] == "critical"
    assert uncaught[1]["exception"].endswith("RuntimeError: the process fails")
