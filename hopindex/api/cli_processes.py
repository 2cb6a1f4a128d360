"""The long-running ``hopindex`` processes: ``worker``, ``beat`` and ``serve``, and the
``api-key`` maker for the server's keys file."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hopindex.api.cli_support import err_console, handle_errors
from hopindex.methods.registry import load_settings
from hopindex.workers.launch import Pool
from hopindex.workers.queues import Queue

if TYPE_CHECKING:
    from hopindex.core.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])


def json_logs_option(func: F) -> F:
    """``--json``: for a process, its log is JSON (parameter ``as_json``, the name every
    command's ``--json`` has, so an error it ends with is JSON too)."""
    option = click.option("--json", "as_json", is_flag=True,
                          help="Log one JSON object per line on stderr (timestamp, level, "
                               "logger, event; tracebacks inside), as "
                               "HOPINDEX_LOG_FORMAT=json does.")
    return option(func)


def process_settings(as_json: bool) -> Settings:
    """The settings, with the process's logging set up from them before anything else
    runs. With ``--json`` the log is JSON from the first line: an error in the settings
    themselves is reported as a JSON record too."""
    from dataclasses import replace

    from hopindex.core.logging import configure_process_logging
    from hopindex.core.settings import LogFormat, Settings

    if as_json:
        configure_process_logging(Settings(log_format=LogFormat.JSON))
    settings = load_settings()
    if as_json:
        settings = replace(settings, log_format=LogFormat.JSON)
    configure_process_logging(settings)
    return settings


@click.command()
@click.option("--queues", default=",".join(q.value for q in Queue), show_default=True,
              help="Comma-separated queues this worker takes tasks from. With the "
                   "embedded engines, the worker taking embed owns them (one per machine) "
                   "and also takes the engine queue, where other processes' engine calls "
                   "arrive.")
@click.option("--concurrency", default=4, show_default=True, help="Tasks run at once.")
@click.option("--pool", type=click.Choice([p.value for p in Pool]), default=Pool.AUTO.value,
              show_default=True,
              help="auto: threads when this worker writes the embedded engines, else prefork.")
@click.option("--name", default=None, help="Worker node name (default hopindex-PID@host).")
@click.option("--metrics-port", type=click.IntRange(0, 65_535), default=None,
              help="Serve Prometheus metrics of this worker and its pool processes on "
                   "http://HOST:PORT/metrics.")
@click.option("--metrics-host", default="127.0.0.1", show_default=True,
              help="Address the metrics endpoint listens on; it has no authentication, so "
                   "it listens on loopback unless told otherwise (containers: 0.0.0.0).")
@json_logs_option
@handle_errors
def worker(queues: str, concurrency: int, pool: str, name: str | None,
           metrics_port: int | None, metrics_host: str, as_json: bool) -> None:
    """Run a Celery worker for some of the queues (needs HOPINDEX_BROKER_URL)."""
    from hopindex.backends.llm.credentials import check_llm_key
    from hopindex.core.memory import limit_malloc_arenas
    from hopindex.workers.launch import parse_queues, run_worker

    settings = process_settings(as_json)
    check_llm_key(settings, queues=parse_queues(queues))
    # Before the pool forks: the children inherit the cap.
    limit_malloc_arenas(settings.malloc_arenas)
    run_worker(settings, parse_queues(queues), concurrency, Pool(pool), name,
               metrics_port=metrics_port, metrics_host=metrics_host)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; other than loopback only with API keys configured.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65_535))
@json_logs_option
@handle_errors
def serve(host: str, port: int, as_json: bool) -> None:
    """Serve the HTTP API (README "HTTP API"); keys from HOPINDEX_API_KEYS(_FILE).

    Without a broker the server opens the data dir's embedded engines itself: it
    records its URL in DATA_DIR/server.json while it runs, so CLI commands on that
    data dir go through it, and does not start (exit 69) beside another server of it.
    """
    from hopindex.api.http.server import serve as run_server
    from hopindex.backends.llm.credentials import check_llm_key
    from hopindex.core.logging import get_logger
    from hopindex.core.settings import LogFormat

    settings = process_settings(as_json)
    check_llm_key(settings)

    def on_ready(url: str) -> None:
        if settings.log_format is LogFormat.JSON:
            # Logged, not printed: a line for people would be the one line of stderr
            # that is not a record.
            get_logger(__name__).info("api_listening", url=url)
        else:
            err_console.print(f"hopindex API on {url} (Ctrl-C stops)")

    run_server(settings, host, port, on_ready=on_ready)


@click.command(name="api-key")
@click.option("--access", type=click.Choice(["read", "write"]), default="read",
              show_default=True)
@click.option("--index", "indexes", multiple=True, help="An index the key covers "
              "(repeat; default: all).")
@click.option("--name", default="client", show_default=True, help="Shown in logs.")
@click.option("--scrypt", is_flag=True, help="Hash with scrypt instead of sha256.")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"key": ..., "entry": ...} (the entry as TOML text).')
@handle_errors
def api_key(access: str, indexes: tuple[str, ...], name: str, scrypt: bool,
            as_json: bool) -> None:
    """Make a random API key: prints it and its entry for HOPINDEX_API_KEYS_FILE (TOML)."""
    from hopindex.api.http.keys import HashScheme, key_file_entry, new_key
    from hopindex.core.ids import validate_index_name

    for index in indexes:
        validate_index_name(index)
    key = new_key()
    scheme = HashScheme.SCRYPT if scrypt else HashScheme.SHA256
    entry = key_file_entry(key, scheme, name=name, access=access, indexes=indexes)
    if as_json:
        import json

        click.echo(json.dumps({"key": key, "entry": entry}))
    else:
        click.echo(f"key: {key}\n\n{entry}")


@click.command()
@json_logs_option
@handle_errors
def beat(as_json: bool) -> None:
    """Run the periodic scheduler: the reaper of stalled jobs (needs HOPINDEX_BROKER_URL)."""
    from hopindex.workers.launch import run_beat

    run_beat(process_settings(as_json))
