"""Processes for the command-line tests: ``celery -A hopindex.workers.app ...``, Flower and
``hopindex`` commands whose stdout and stderr are read apart (``hopindex.testing.workers``
merges them)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from hopindex.core.settings import Settings
from hopindex.testing.workers import stop_session
from tests import waiting

APP = "hopindex.workers.app"
START_TIMEOUT_S = 90.0


def settings_env(settings: Settings, **extra: str) -> dict[str, str]:
    """This process's environment without its own HOPINDEX_* variables, plus ``settings``'."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOPINDEX_")}
    return {**env, **settings.to_env(), **extra}


def hopindex_argv(*args: str) -> list[str]:
    return [sys.executable, "-c", "from hopindex.api.cli import main; main()", *args]


def celery_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", APP, *args]


class LoggedProcess:
    """A command in its own session (so ``stop`` reaches its pool children), stdout and
    stderr each in a file; ready once ``ready_mark`` appears on stderr."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], *, log_dir: Path,
                 name: str, ready_mark: str = "") -> None:
        self.name = name
        self.stdout_path = log_dir / f"{name}.stdout"
        self.stderr_path = log_dir / f"{name}.stderr"
        self._ready_mark = ready_mark
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.process = subprocess.Popen(list(argv), env=env, stdout=out, stderr=err,
                                            start_new_session=True)

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> Self:
        def started() -> bool:
            if self._ready_mark in self.stderr():
                return True
            assert self.process.poll() is None, f"{self.name} exited ({self.process.returncode})"
            return False

        try:
            waiting.wait_until(started, what=f"{self.name} to start", timeout_s=timeout_s,
                               interval_s=0.1)
        except AssertionError as failed:
            self.stop()
            failed.add_note(f"{self.name} did not start:\n{self.stderr()[-3000:]}"
                            f"\n{self.stdout()[-1000:]}")
            raise
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM (a worker's warm shutdown), SIGKILL after ``timeout_s``."""
        stop_session(self.process, timeout_s)

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
