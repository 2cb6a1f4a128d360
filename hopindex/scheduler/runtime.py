"""What the runtime's code works with: settings, backends, the task app, and the index
methods found in the registry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from celery import Celery
from celery.canvas import Signature

from hopindex.backends.llm.usage import UsageMeter
from hopindex.backends.registry import Backends
from hopindex.core.errors import ConfigError, NotFoundError
from hopindex.core.settings import Settings
from hopindex.methods.plugin import IndexMethod, LlmUse, PhaseContext, phase_name
from hopindex.methods.registry import get_index_method, method_settings

if TYPE_CHECKING:
    # The CLI imports this module to start; the runner pulls in the openai SDK.
    from hopindex.backends.llm.runner import LlmRunner


@dataclass(slots=True)
class Runtime:
    settings: Settings
    backends: Backends
    # The Celery app tasks are sent through, by name (hopindex/scheduler/task_names.py).
    app: Celery | None = None

    def index_method_name(self, index: str) -> str:
        """The method the index was created for: it decides what each phase does."""
        info = self.backends.state.get_index(index)
        if info is None:
            raise NotFoundError(f"no index {index!r}")
        return info.method

    def index_method(self, index: str) -> IndexMethod:
        name = self.index_method_name(index)
        try:
            return get_index_method(name)
        except Exception:
            raise ConfigError(f"index {index!r} is built with {name!r}, which no installed "
                              "method provides: install its plugin") from None

    def phase_context(self, index: str, phase: str, usage: UsageMeter | None = None, *,
                      job_id: str = "") -> PhaseContext:
        method = self.index_method(index)
        backends = self.backends
        return PhaseContext(
            index=index, method=method.name, phase=phase_name(method.name, phase),
            state=backends.state, keywords=backends.keywords,
            settings=method_settings(self.settings, method.name),
            usage=usage if usage is not None else UsageMeter(),
            open_nlp=lambda: backends.nlp, open_llm=lambda: backends.llm,
            open_vectors=lambda: backends.vectors, job_id=job_id)

    def require_llm(self, index: str, method: IndexMethod | None = None) -> LlmRunner | None:
        """The LLM when the index's method needs one; a clear error when it is missing."""
        method = method or self.index_method(index)
        if method.llm_use is LlmUse.NONE:
            return None
        if self.backends.llm is None:
            raise ConfigError(f"index {index!r} is built with {method.name!r}, which needs an "
                              "LLM, and none is configured in this process: set "
                              "HOPINDEX_LLM_MODEL (and HOPINDEX_LLM_BASE_URL, OPENAI_API_KEY)")
        return self.backends.llm

    def signature(self, name: str, *args: Any, immutable: bool = False) -> Signature:
        """A task of this app by name, routed to its queue by the app's routes."""
        if self.app is None:
            raise ConfigError("this runtime has no task app: open it through "
                              "hopindex.workers.runtime")
        return self.app.signature(name, args=args, immutable=immutable)
