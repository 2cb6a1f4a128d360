"""The backends a process's tasks use: opened once per process, from settings."""

from __future__ import annotations

from dataclasses import dataclass

from hopindex.backends.registry import Backends, open_backends
from hopindex.core.settings import Settings
from hopindex.methods.extractive.stage1 import ChunkPolicy
from hopindex.methods.extractive.stage2 import BridgePolicy


@dataclass(slots=True)
class Runtime:
    settings: Settings
    backends: Backends

    @property
    def bridge_policy(self) -> BridgePolicy:
        s = self.settings
        return BridgePolicy(tau=s.tau, max_docs=s.bridge_max_docs,
                            max_sentences=s.bridge_max_sentences)

    @property
    def chunk_policy(self) -> ChunkPolicy:
        return ChunkPolicy()


_current: Runtime | None = None


def bind_runtime(runtime: Runtime | None) -> None:
    """Install the runtime tasks in this process use (the service does this in eager mode)."""
    global _current  # noqa: PLW0603  # one runtime per process is the point of this module
    _current = runtime


def current_runtime() -> Runtime:
    """The bound runtime, else one opened from the environment (a real worker process)."""
    global _current  # noqa: PLW0603  # see bind_runtime
    if _current is None:
        settings = Settings.from_env()
        _current = Runtime(settings=settings, backends=open_backends(settings))
    return _current
