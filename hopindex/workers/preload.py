"""What a worker imports before its pool starts, so that no task pays for it.

The LLM client's stack (the provider SDK and its HTTP library: thousands of classes)
takes seconds to import, and the CLI keeps it lazy so that commands start fast. A
prefork child that imported it in its first task would spend those seconds inside the
task's time limit, once per child, all children at once; on a busy machine the limit
ends the task first, the pool replaces the child, and the new child starts the import
over: the stage never moves. Imported in the worker before the pool forks, every child
inherits the modules, and a thread pool's threads do not wait on each other's import.

Only workers that take an LLM queue pay the import (a few seconds of start-up); an
engines or webhook worker starts as fast as before.
"""

from __future__ import annotations

import importlib
from collections.abc import Collection

from hopindex.core.logging import get_logger
from hopindex.workers.queues import Queue

log = get_logger(__name__)

# The queues whose tasks call an LLM: the method phases and the query-time judge.
LLM_QUEUES = frozenset({Queue.STAGE1.value, Queue.STAGE2.value, Queue.JUDGE.value})

# Imported on a task's first use of an LLM or a reranker (backends/registry.py): the
# client and the runner, and the Prometheus observers the client reports to.
LLM_MODULES = (
    "hopindex.backends.llm.runner",
    "hopindex.backends.llm.client",
    "hopindex.backends.llm.cache_redis",
    "hopindex.backends.rerank.http_reranker",
    "hopindex.monitoring.llm",
    "hopindex.monitoring.rerank",
)


def takes_llm_work(queues: Collection[str] | None) -> bool:
    """Whether a worker taking ``queues`` runs LLM calls (no queues named: all of them)."""
    return not queues or not LLM_QUEUES.isdisjoint(queues)


def preload_task_modules(queues: Collection[str] | None) -> tuple[str, ...]:
    """Import the modules the tasks of ``queues`` open lazily; returns which."""
    modules = LLM_MODULES if takes_llm_work(queues) else ()
    for name in modules:
        importlib.import_module(name)
    if modules:
        log.debug("worker_modules_preloaded", modules=list(modules))
    return modules
