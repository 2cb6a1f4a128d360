"""Running the API: ``hopindex serve`` in the foreground, or a background thread
(tests, benchmarks) on a free loopback port."""

from __future__ import annotations

import asyncio
import ipaddress
import signal
import threading
from collections.abc import Callable
from types import TracebackType

from aiohttp import web

from hopindex.api.http.app import create_app
from hopindex.api.http.keys import KeyRing, load_key_ring
from hopindex.api.http.metrics import may_name_indexes
from hopindex.api.http.protocol import MAX_HEADER_BYTES, MAX_REQUEST_LINE_BYTES, JsonErrorRunner
from hopindex.api.http.routing import CONTEXT
from hopindex.api.server_record import recording_server
from hopindex.api.service import Hopindex
from hopindex.core.errors import ConfigError
from hopindex.core.logging import get_logger
from hopindex.core.settings import Settings
from hopindex.monitoring.exposition import register_state_collector

log = get_logger(__name__)

SHUTDOWN_TIMEOUT_S = 10.0
START_TIMEOUT_S = 30.0


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def check_bind(host: str, keys: KeyRing) -> None:
    """Without keys anyone who reaches the port could write: loopback only, then."""
    if not keys.configured and not is_loopback(host):
        raise ConfigError(f"refusing to serve on {host!r} without API keys: set "
                          "HOPINDEX_API_KEYS or HOPINDEX_API_KEYS_FILE, or bind 127.0.0.1")


def _url(runner: web.AppRunner) -> str:
    host, port = runner.addresses[0][:2]
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}"


async def _run(app: web.Application, host: str, port: int, stop: asyncio.Event,
               on_ready: Callable[[str], None]) -> None:
    runner = JsonErrorRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT_S,
                             max_line_size=MAX_REQUEST_LINE_BYTES,
                             max_field_size=MAX_HEADER_BYTES)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        on_ready(_url(runner))
        await stop.wait()
    finally:
        await runner.cleanup()


def serve(settings: Settings, host: str, port: int,
          on_ready: Callable[[str], None] = lambda url: None) -> None:
    """Serve until SIGINT or SIGTERM; the service is opened here and closed on the way out."""
    keys = load_key_ring(settings.api_keys, settings.api_keys_file)
    check_bind(host, keys)
    # Outside the service: the record goes once the engines are released.
    with recording_server(settings) as publish, Hopindex(settings) as service:
        app = create_app(service, keys)
        if not keys.configured:
            log.warning("api_auth_disabled", host=host, port=port,
                        reason="no HOPINDEX_API_KEYS or HOPINDEX_API_KEYS_FILE: every request "
                               "is allowed, so the server listens on loopback only")
        if keys.entries_without_id:
            log.warning("api_keys_without_id", entries=keys.entries_without_id,
                        reason="every wrong key costs a scrypt check against these entries; "
                               "replace them with keys from `hopindex api-key --scrypt`, "
                               "whose entries have an id")

        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)

            def ready(url: str) -> None:
                log.info("api_serving", url=url, keys=keys.configured,
                         workers=service.runs_on_workers)
                publish(url, keys.configured)
                on_ready(url)

            await _run(app, host, port, stop, ready)

        # Queue depth, jobs and units from Redis, exported by one process at a time:
        # here only when /metrics may name indexes (units are per index).
        state_gauges = (register_state_collector(settings) if may_name_indexes(settings)
                        else None)
        try:
            asyncio.run(main())
        finally:
            if state_gauges is not None:
                state_gauges.close()


class BackgroundServer:
    """The API on a loopback port in a thread of this process: ``with
    BackgroundServer(service, keys) as server: ... server.url``."""

    def __init__(self, service: Hopindex, keys: KeyRing | None = None,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.service = service
        self.app = create_app(service, keys)
        check_bind(host, self.app[CONTEXT].keys)
        self._host, self._port = host, port
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.url = ""
        self._thread = threading.Thread(target=self._main, name="hopindex-api-server",
                                        daemon=True)

    def _main(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()

            def ready(url: str) -> None:
                self.url = url
                self._ready.set()

            await _run(self.app, self._host, self._port, self._stop, ready)

        try:
            asyncio.run(main())
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    def __enter__(self) -> BackgroundServer:
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S) or self._error is not None:
            raise RuntimeError(f"the API server did not start: {self._error!r}")
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(SHUTDOWN_TIMEOUT_S + 30)
