"""Real ``hopindex worker`` and ``hopindex beat`` processes for integration tests and
benchmarks.

Each process runs in its own session (process group), so ``kill`` can SIGKILL the
worker and its pool children together, the way a machine dies.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from hopindex.core.errors import BackendUnavailableError
from hopindex.core.settings import Settings

READY_MARK = " ready."
# What celery beat logs once its scheduler runs.
BEAT_READY_MARK = "beat: Starting..."
START_TIMEOUT_S = 60.0


def stop_session(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """SIGTERM to a process started in its own session and its children (a worker's
    warm shutdown), SIGKILL after ``timeout_s``."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


class HopindexProcess:
    """A ``hopindex`` subcommand in its own process group, its output kept in ``log_path``;
    ready once it prints ``ready_mark``."""

    def __init__(self, settings: Settings, command: Sequence[str], *, name: str,
                 log_path: Path, ready_mark: str) -> None:
        self.name = name
        self.log_path = log_path
        self._ready_mark = ready_mark.encode()
        env = {**os.environ, **settings.to_env(), "HOPINDEX_LOG_LEVEL": "INFO"}
        argv = [sys.executable, "-c", "from hopindex.api.cli import main; main()", *command]
        self._log = log_path.open("wb")
        self._ready = threading.Event()
        self.process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        assert self.process.stdout is not None  # set by Popen(stdout=PIPE)
        for line in self.process.stdout:
            self._log.write(line)
            self._log.flush()
            if self._ready_mark in line:
                self._ready.set()

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> Self:
        deadline = time.monotonic() + timeout_s
        while not self._ready.wait(0.1):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise BackendUnavailableError(
                    f"{self.name} did not start; its log: {self.log_path}\n"
                    + self.log_path.read_text(errors="replace")[-3000:])
        return self

    def kill(self) -> None:
        """SIGKILL the worker and its pool children: no shutdown, no acknowledgements."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self._close_log()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Warm shutdown (SIGTERM: finish running tasks), SIGKILL after ``timeout_s``."""
        stop_session(self.process, timeout_s)
        self._close_log()

    def _close_log(self) -> None:
        self._reader.join(timeout=5)
        self._log.close()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class WorkerProcess(HopindexProcess):
    """``hopindex worker`` for ``settings`` (which must name a broker)."""

    def __init__(self, settings: Settings, queues: Sequence[str], *, concurrency: int = 2,
                 pool: str = "auto", name: str, log_path: Path) -> None:
        super().__init__(settings, ["worker", "--queues", ",".join(queues),
                                    "--concurrency", str(concurrency), "--pool", pool,
                                    "--name", f"{name}@%h"],
                         name=name, log_path=log_path, ready_mark=READY_MARK)


class BeatProcess(HopindexProcess):
    """``hopindex beat``: sends the reaper every ``settings.reaper_interval_s``."""

    def __init__(self, settings: Settings, *, name: str = "beat", log_path: Path) -> None:
        super().__init__(settings, ["beat"], name=name, log_path=log_path,
                         ready_mark=BEAT_READY_MARK)
