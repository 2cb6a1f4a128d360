"""The runtime a process's tasks use: opened once per process, from settings."""

from __future__ import annotations

import threading

from hopindex.methods.registry import load_settings
from hopindex.scheduler.runtime import Runtime
from hopindex.workers.app import app, load_tasks
from hopindex.workers.base import set_runtime_source
from hopindex.workers.engine_route import open_process_backends

__all__ = ["Runtime", "bind_runtime", "current_runtime"]

_current: Runtime | None = None
# A worker with a thread pool starts several tasks at once: without the lock, the first
# of them each opened the process's backends, and the second embedded vector store
# then failed to open the shard the first held ("Can't init WAL: WouldBlock").
_opening = threading.Lock()


def bind_runtime(runtime: Runtime | None) -> None:
    """Install the runtime tasks in this process use (the service does this in eager mode)."""
    global _current  # noqa: PLW0603  # one runtime per process is the point of this module
    if runtime is not None and runtime.app is None:
        runtime.app = app
    load_tasks()
    _current = runtime


def current_runtime() -> Runtime:
    """The bound runtime, else one opened from the environment (a real worker process)."""
    global _current  # noqa: PLW0603  # see bind_runtime
    if _current is not None:
        return _current
    with _opening:
        if _current is None:
            load_tasks()
            settings = load_settings()
            _current = Runtime(settings=settings, backends=open_process_backends(settings),
                               app=app)
        return _current


set_runtime_source(current_runtime)
