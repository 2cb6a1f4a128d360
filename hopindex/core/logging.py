"""structlog configuration: events with keys, not sentences.

Every record a process logs goes through one handler on the root logger and one
structlog ``ProcessorFormatter``: hopindex's own events and the standard-library records
of Celery, kombu, aiohttp and the rest, so a process writes one format on stderr.
``console`` is for people; ``json`` is one object per line (``timestamp``, ``level``,
``logger``, ``event``, the event's keys, and a traceback as ``exception``) for log
collectors.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Iterable, Iterator, MutableMapping
from types import TracebackType
from typing import Any, TextIO

import structlog

from hopindex.core.redact import redact_values
from hopindex.core.settings import LogFormat, LogLevel, Settings
from hopindex.core.tracing import configure_tracing, current_ids

# hopindex's loggers speak at the configured level; every library logs from WARNING up
# whatever the level: at INFO the HTTP clients (the LLM SDK's among them) log every
# request, which would bury the service's own events.
OWN_LOGGER = "hopindex"
LIBRARY_FLOOR = logging.WARNING
# In a worker or beat process Celery's records are the process's own too (a task
# received, succeeded, retried): they follow the level there. In a command running tasks
# eagerly they stay at the floor, or each task would add a line at INFO.
PROCESS_LOGGERS = ("celery",)
# Where writes to a redirected sys.stdout / sys.stderr are logged, and at what level
# (Celery's own redirection logs both at WARNING, so a print is seen at the default level).
STREAM_LOGGERS = {"stdout": logging.WARNING, "stderr": logging.WARNING}
# A redirected stream logs what it holds once it ends in a line break or is flushed;
# a writer that never does either (a progress bar redrawn with "\r") is cut here.
MAX_PENDING_CHARS = 64_000

_redirect_lock = threading.Lock()
# The streams sys.stdout and sys.stderr were before redirect_std_streams replaced them:
# the handler writes to the real stderr, never back into the stand-in.
_real_streams: dict[str, TextIO] = {}
# How deep this thread is inside logging a record: a write to a redirected stream from
# in there (Handler.handleError's complaint, another handler holding the stand-in) goes
# straight to the real stream, since logging it would loop back here.
_logging_depth = threading.local()


def level_number(level: LogLevel) -> int:
    return logging.getLevelNamesMapping().get(level.value.upper(), logging.WARNING)


def configure_logging(settings: Settings) -> None:
    """Route structlog and the standard library through one stderr handler rendering
    ``settings.log_format``. Safe to call again (each service does): the handler is
    replaced, not added twice.

    A process's traces are set up here too, once (core/tracing: off unless the
    ``OTEL_*`` variables ask): every process that logs sets its logging up first, and
    with tracing on each line carries the ids of the span it was logged in."""
    level = level_number(settings.log_level)
    stamped: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso"),
    ]
    if configure_tracing():
        stamped.append(add_trace_ids)
    structlog.configure(
        # Redacted here too, not only when rendered: a record reaches every handler on
        # the root logger (a test's capture, an operator's own) as its event dict.
        processors=[*stamped, _redact, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=stamped,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    *_rendering(settings.log_format)],
    )
    handler = _StderrHandler()
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(max(level, LIBRARY_FLOOR))
    logging.getLogger(OWN_LOGGER).setLevel(level)


def _rendering(log_format: LogFormat) -> list[structlog.types.Processor]:
    if log_format is LogFormat.JSON:
        # The traceback becomes the ``exception`` string of its event's one line, and
        # is redacted with the rest (an error's message may quote a URL).
        return [structlog.processors.format_exc_info, _redact,
                structlog.processors.JSONRenderer()]
    # Plain tracebacks: rich's would print each frame's local variables, and a local may
    # hold an API key or a provider secret.
    return [_redact, structlog.dev.ConsoleRenderer(
        colors=False, exception_formatter=structlog.dev.plain_traceback)]


def configure_process_logging(settings: Settings) -> None:
    """``configure_logging`` for a long-running process (``serve``, ``worker``, ``beat``):
    Celery's records follow the level too, and in JSON every write to stdout or stderr
    and every uncaught exception becomes a record, so each line the process writes on
    stderr is one JSON object."""
    configure_logging(settings)
    for name in PROCESS_LOGGERS:
        logging.getLogger(name).setLevel(level_number(settings.log_level))
    if settings.log_format is LogFormat.JSON:
        redirect_std_streams()


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to stderr as it is at each record: test runners swap ``sys.stderr`` per
    test, and a handler holding an earlier one would write to a closed file. Once the
    streams are redirected, to the real stderr the stand-in replaced."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        # Under the handler's lock (Handler.handle holds it), so no other thread
        # writes between the two lines.
        self.stream = _real_streams.get("stderr") or sys.stderr
        with _logging_now():
            super().emit(record)


def redirect_std_streams() -> None:
    """Replace ``sys.stdout`` and ``sys.stderr`` with streams that log what is written
    (loggers ``stdout`` and ``stderr``), and log uncaught exceptions with their traceback
    (``uncaught_exception``) instead of printing them. Once per process; later calls
    change nothing.

    File descriptors are untouched: what writes to fd 1 or 2 directly (a crash dump,
    a child process) still writes plain text.
    """
    with _redirect_lock:
        if _real_streams:
            return
        _real_streams["stdout"], _real_streams["stderr"] = sys.stdout, sys.stderr
        sys.stdout = _LoggingStream("stdout", _real_streams["stdout"])
        sys.stderr = _LoggingStream("stderr", _real_streams["stderr"])
        sys.excepthook = _log_uncaught
        threading.excepthook = _log_uncaught_in_thread
        # Python's warnings become records of ``py.warnings`` rather than stderr text.
        logging.captureWarnings(True)


class _LoggingStream:
    """A text stream whose writes are logged: one record per line, or per write when a
    write brings several lines at once (a rendered message, a table) and ends with a
    line break, so what was written together stays together."""

    closed = False

    def __init__(self, name: str, real: TextIO) -> None:
        self._logger = logging.getLogger(name)
        self._level = STREAM_LOGGERS[name]
        self._real = real
        self._pending = ""
        self._lock = threading.RLock()

    def write(self, text: str) -> int:
        if getattr(_logging_depth, "value", 0):
            return self._real.write(text)
        with self._lock:
            self._pending += text
            if self._pending.endswith("\n") or len(self._pending) > MAX_PENDING_CHARS:
                self._send()
        return len(text)

    def flush(self) -> None:
        with self._lock:
            self._send()

    def _send(self) -> None:
        message, self._pending = self._pending.rstrip("\n"), ""
        if message.strip():
            with _logging_now():
                self._logger.log(self._level, message)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._real.fileno()

    @property
    def encoding(self) -> str:
        return self._real.encoding

    @property
    def errors(self) -> str | None:
        return self._real.errors


@contextlib.contextmanager
def _logging_now() -> Iterator[None]:
    _logging_depth.value = getattr(_logging_depth, "value", 0) + 1
    try:
        yield
    finally:
        _logging_depth.value -= 1


def _log_uncaught(exc_type: type[BaseException], exc: BaseException,
                  tb: TracebackType | None) -> None:
    get_logger(__name__).critical("uncaught_exception", exc_info=(exc_type, exc, tb))


def _log_uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit or args.exc_value is None:
        return  # a thread ending itself, which Python's own hook does not report either
    thread = args.thread.name if args.thread is not None else None
    get_logger(__name__).error("uncaught_exception", thread=thread,
                               exc_info=(args.exc_type, args.exc_value, args.exc_traceback))


def add_trace_ids(_logger: object, _method: str, event: MutableMapping[str, Any]
                  ) -> MutableMapping[str, Any]:
    """``trace_id`` and ``span_id`` of the span current where the line was logged, so a
    log search and a trace view find each other."""
    ids = current_ids()
    if ids is not None:
        event.setdefault("trace_id", ids[0])
        event.setdefault("span_id", ids[1])
    return event


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
