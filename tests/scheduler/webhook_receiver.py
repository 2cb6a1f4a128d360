"""A real HTTP endpoint that records what webhooks POST to it, for tests.

``WebhookReceiver`` listens on a free loopback port in a thread. Every request is
kept as ``(body, headers)`` with header names lower-cased; ``status`` and
``delay_s`` may be changed while it runs to play a failing or slow receiver, and
``hold`` to play a black hole: each request is accepted and read but never answered
(and not kept) until ``hold`` is turned off; ``held`` counts them. ``location`` is
sent with a 3xx ``status``; ``most_at_once`` is the most requests it had in flight.
``answers`` are the statuses of the first requests, in the order they arrive, before
``status`` answers the rest: a receiver that fails a set number of times, with no race
between a test changing ``status`` and a request being answered.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

Delivery = tuple[bytes, dict[str, str]]


class WebhookReceiver:
    def __init__(self, *, status: int = 200, delay_s: float = 0.0, hold: bool = False,
                 location: str = "", answers: Sequence[int] = ()) -> None:
        self.status = status
        self._answers = deque(answers)
        self.delay_s = delay_s
        self._hold = hold
        self.location = location
        self.held = 0
        self.most_at_once = 0
        self._in_flight = 0
        self._received: list[Delivery] = []
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver._changed:
                    receiver._in_flight += 1
                    receiver.most_at_once = max(receiver.most_at_once, receiver._in_flight)
                try:
                    if receiver.hold:
                        self._never_answer()
                        return
                    self._answer(body, headers)
                finally:
                    with receiver._changed:
                        receiver._in_flight -= 1

            def _never_answer(self) -> None:
                with receiver._changed:
                    receiver.held += 1
                    receiver._changed.notify_all()
                    # Turning hold off and stopping both notify.
                    receiver._changed.wait_for(
                        lambda: not receiver._hold or receiver._stopping.is_set())
                self.close_connection = True

            def _answer(self, body: bytes, headers: dict[str, str]) -> None:
                with receiver._changed:
                    receiver._received.append((body, headers))
                    scripted = receiver._answers.popleft() if receiver._answers else None
                    receiver._changed.notify_all()
                if receiver.delay_s:
                    # Not a wait of the test's: this plays a receiver slow to answer.
                    time.sleep(receiver.delay_s)
                status = receiver.status if scripted is None else scripted
                reply = b"ok" if status < 400 else b"receiver says no"
                try:
                    self.send_response(status)
                    if receiver.location:
                        self.send_header("Location", receiver.location)
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing left to answer

            def log_message(self, format: str, *args: Any) -> None:
                return  # keep test output clean; the recorded requests are the log

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # serve_forever looks for shutdown() between polls: at its default 0.5 s every
        # receiver would add up to half a second to its test's end.
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def hold(self) -> bool:
        return self._hold

    @hold.setter
    def hold(self, value: bool) -> None:
        with self._changed:
            self._hold = value
            self._changed.notify_all()  # releases the requests held so far

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/hooks/hopindex"

    @property
    def received(self) -> list[Delivery]:
        with self._changed:
            return list(self._received)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def wait_held(self, count: int, timeout_s: float = 30.0) -> None:
        """Return once ``count`` requests were held (black-hole mode); TimeoutError if not."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while self.held < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"webhook receiver: {self.held} of {count} requests "
                                       f"held within {timeout_s} s")
                self._changed.wait(remaining)

    def wait_for(self, predicate: Callable[[list[Delivery]], bool],
                 timeout_s: float = 10.0) -> list[Delivery]:
        """Every delivery so far, once ``predicate`` holds for them; TimeoutError if it
        does not within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not predicate(self._received):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"webhook receiver: condition not met within "
                                       f"{timeout_s} s; {len(self._received)} deliveries")
                self._changed.wait(remaining)
            return list(self._received)

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        with self._changed:
            self._stopping.set()
            self._changed.notify_all()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
