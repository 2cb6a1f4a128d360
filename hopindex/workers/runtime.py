"""The backends a process's tasks use: opened once per process, from settings."""

from __future__ import annotations

from dataclasses import dataclass

from hopindex.backends.llm.runner import LlmRunner
from hopindex.backends.registry import Backends
from hopindex.core.errors import ConfigError, NotFoundError
from hopindex.core.settings import Settings
from hopindex.methods.extractive.stage1 import ChunkPolicy
from hopindex.methods.extractive.stage2 import BridgePolicy
from hopindex.workers.engine_route import open_process_backends


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

    def index_method(self, index: str) -> str:
        """The method the index was created for: it decides what each stage does."""
        info = self.backends.state.get_index(index)
        if info is None:
            raise NotFoundError(f"no index {index!r}")
        return info.method

    def require_llm(self, index: str) -> LlmRunner:
        if self.backends.llm is None:
            raise ConfigError(f"index {index!r} is built with an LLM, but none is configured "
                              "in this process: set HOPINDEX_LLM_MODEL (and "
                              "HOPINDEX_LLM_BASE_URL, OPENAI_API_KEY)")
        return self.backends.llm


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
        _current = Runtime(settings=settings, backends=open_process_backends(settings))
    return _current
