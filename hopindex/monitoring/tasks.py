"""Celery signal hooks: every task run is timed, counted and logged with its job's context.

``workers/app.configure_app`` installs them in every process that runs tasks (a
worker, or the submitting process in eager mode), so tasks carry no metric code:

- ``task_prerun``: binds ``job_id``, ``index`` and ``stage`` to structlog's context
  (every log line of the run carries them) and counts the run in progress;
- ``task_postrun``: the run's duration and outcome (succeeded, failed, retried);
  after a job's ``finalize``, its documents by outcome and its ingestion multiplier
  (monitoring/ingest_multiplier.py), each once per job;
- ``task_failure`` / ``task_retry``: the error type that failed or retried a run.

The stage label is a phase task's phase (``indexrag.stage1``: a set fixed by the
installed methods) and any other task's name without the ``hopindex.`` prefix
(``embed``, ``control.finalize``): a set fixed by the code.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextvars import Token
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog
from celery import signals

from hopindex.backends.embedder.metering import EmbeddingObserver, use_embedding_observer
from hopindex.backends.llm.observer import LlmObserver, use_observer
from hopindex.backends.rerank.observer import RerankObserver, use_rerank_observer
from hopindex.core.logging import get_logger
from hopindex.core.models import Job, JobKind, JobState, Stage, StageCounts
from hopindex.core.settings import MetricsMode, Settings
from hopindex.monitoring.labels import DocumentOutcome, TaskOutcome
from hopindex.scheduler.progress import settle

if TYPE_CHECKING:
    from hopindex.scheduler.runtime import Runtime

log = get_logger(__name__)

TASK_PREFIX = "hopindex."
FINALIZE_TASK = "hopindex.control.finalize"
# The settle key that makes a job's documents count once, even if its finalize
# task runs twice (a redelivered callback).
DOCUMENTS_COUNTED_KEY = "metrics:documents"
# The same for a job's ingestion multiplier, corpus and LLM tokens.
MULTIPLIER_OBSERVED_KEY = "metrics:multiplier"
_CELERY_STATES = {"SUCCESS": TaskOutcome.SUCCEEDED, "FAILURE": TaskOutcome.FAILED,
                  "RETRY": TaskOutcome.RETRIED}


PHASE_TASK_PREFIX = "hopindex.phase."


def stage_of(task_name: str, args: tuple[Any, ...] = ()) -> str:
    """A phase task's label is its phase's qualified name (its third argument,
    ``indexrag.stage1``); any other task's, its name without the prefix."""
    if task_name.startswith(PHASE_TASK_PREFIX) and len(args) > 2 and isinstance(args[2], str):
        return args[2]
    return task_name.removeprefix(TASK_PREFIX)


@dataclass(slots=True)
class _Run:
    stage: str
    started: float
    tokens: dict[str, Token[Any]]


class _Hooks:
    """This process's hook state: whether metrics are recorded, and the runs in flight."""

    def __init__(self) -> None:
        self.metrics = False
        self.connected = False
        self.runs: dict[str, _Run] = {}
        self.lock = threading.Lock()
        self.runtime_source: Callable[[], Runtime] | None = None


_hooks = _Hooks()


def _prometheus_observer() -> LlmObserver:
    # Imported when the first LLM client opens (prometheus_client is not free), unless
    # install_task_hooks imported it already, as a worker does before it forks.
    from hopindex.monitoring.llm import PrometheusLlmObserver

    return PrometheusLlmObserver()


def _prometheus_embedding_observer() -> EmbeddingObserver:
    from hopindex.monitoring.llm import PrometheusEmbeddingObserver

    return PrometheusEmbeddingObserver()


def _prometheus_rerank_observer() -> RerankObserver:
    from hopindex.monitoring.rerank import PrometheusRerankObserver

    return PrometheusRerankObserver()


def install_task_hooks(settings: Settings, runtime_source: Callable[[], Runtime]) -> None:
    """Connect the hooks once per process; ``settings`` decides whether they record
    metrics (the structlog context is bound either way). ``runtime_source`` gives the
    process's runtime, read when a finished job's documents are counted."""
    _hooks.runtime_source = runtime_source
    _hooks.metrics = settings.metrics is MetricsMode.ON
    # Every LLM client and reranker this process opens reports to Prometheus (when
    # metrics are on).
    use_observer(_prometheus_observer)
    use_embedding_observer(_prometheus_embedding_observer)
    use_rerank_observer(_prometheus_rerank_observer)
    with _hooks.lock:
        if _hooks.connected:
            return
        uid = "hopindex.monitoring.tasks."
        signals.task_prerun.connect(_on_prerun, weak=False, dispatch_uid=uid + "prerun")
        signals.task_postrun.connect(_on_postrun, weak=False, dispatch_uid=uid + "postrun")
        signals.task_failure.connect(_on_failure, weak=False, dispatch_uid=uid + "failure")
        signals.task_retry.connect(_on_retry, weak=False, dispatch_uid=uid + "retry")
        _hooks.connected = True


def job_context(task: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, str]:
    """``job_id`` and ``index`` of a job task run: every job task takes them as its first
    two string arguments (a chord callback gets its header's results, a list, before)."""
    if not getattr(task, "job_bound", False):
        return {}
    strings = [a for a in args if isinstance(a, str)]
    context: dict[str, str] = {}
    job_id = kwargs.get("job_id") or (strings[0] if strings else None)
    index = kwargs.get("index") or (strings[1] if len(strings) > 1 else None)
    if job_id:
        context["job_id"] = str(job_id)
    if index:
        context["index"] = str(index)
    return context


def _on_prerun(*, sender: Any = None, task_id: str | None = None, task: Any = None,
                args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None,
                **_: Any) -> None:
    if task is None or task_id is None:
        return
    stage = stage_of(task.name, tuple(args or ()))
    tokens = structlog.contextvars.bind_contextvars(
        stage=stage, **job_context(task, tuple(args or ()), dict(kwargs or {})))
    _hooks.runs[task_id] = _Run(stage=stage, started=time.perf_counter(), tokens=dict(tokens))
    if _hooks.metrics:
        from hopindex.monitoring import metrics as m

        m.STAGE_TASKS_IN_PROGRESS.labels(stage=stage).inc()


def _on_postrun(*, sender: Any = None, task_id: str | None = None, task: Any = None,
                 args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None,
                 state: str | None = None, **_: Any) -> None:
    run = _hooks.runs.pop(task_id or "", None)
    if run is None or task is None:
        return
    try:
        if not _hooks.metrics:
            return
        from hopindex.monitoring import metrics as m

        m.STAGE_TASKS_IN_PROGRESS.labels(stage=run.stage).dec()
        m.STAGE_TASK_DURATION.labels(stage=run.stage).observe(time.perf_counter() - run.started)
        # An eager run that raised (task_eager_propagates) ends here with no state.
        outcome = _CELERY_STATES.get(state or "FAILURE", TaskOutcome.OTHER)
        m.STAGE_TASKS.labels(stage=run.stage, outcome=outcome.value).inc()
        if task.name == FINALIZE_TASK and state == "SUCCESS":
            context = job_context(task, tuple(args or ()), dict(kwargs or {}))
            if "job_id" in context:
                _count_documents(context["job_id"])
                _observe_multiplier(context["job_id"])
    finally:
        structlog.contextvars.reset_contextvars(**run.tokens)


def _on_failure(*, sender: Any = None, exception: BaseException | None = None,
                args: tuple[Any, ...] = (), **_: Any) -> None:
    if not _hooks.metrics or sender is None:
        return
    from hopindex.monitoring import metrics as m

    m.STAGE_TASK_FAILURES.labels(stage=stage_of(sender.name, tuple(args or ())),
                                 error=type(exception).__name__).inc()


def _on_retry(*, sender: Any = None, reason: object = None, request: Any = None,
              **_: Any) -> None:
    if not _hooks.metrics or sender is None:
        return
    from hopindex.monitoring import metrics as m

    error = type(reason).__name__ if isinstance(reason, BaseException) else "Retry"
    args = tuple(getattr(request, "args", None) or ())
    m.STAGE_TASK_RETRIES.labels(stage=stage_of(sender.name, args), error=error).inc()


def document_outcomes(job: Job) -> dict[DocumentOutcome, int]:
    """A finished job's documents by outcome (``hopindex_documents_ingested_total``)."""
    validate = job.count(Stage.VALIDATE)
    first = job.documents_phase()
    stage1 = job.count(first) if first is not None else StageCounts()
    if job.kind is JobKind.DELETE:
        return {DocumentOutcome.DELETED: validate.done, DocumentOutcome.FAILED: validate.failed}
    return {DocumentOutcome.INDEXED: stage1.done, DocumentOutcome.UNCHANGED: stage1.skipped,
            DocumentOutcome.FAILED: validate.failed + stage1.failed}


def _count_documents(job_id: str) -> None:
    """Count a succeeded job's documents once, whichever worker ran its finalize."""
    from hopindex.monitoring import metrics as m

    if _hooks.runtime_source is None:
        return
    try:
        state = _hooks.runtime_source().backends.state
        job = state.get_job(job_id)
        if job is None or job.state not in (JobState.SUCCEEDED, JobState.SUCCEEDED_WITH_ERRORS):
            return
        job, applied = settle(state, job_id, lambda _job: None, key=DOCUMENTS_COUNTED_KEY)
    except Exception as exc:  # a metric must never fail the task it watches
        log.warning("documents_not_counted", job_id=job_id, error=str(exc))
        return
    if applied:
        for outcome, count in document_outcomes(job).items():
            if count:
                m.DOCUMENTS_INGESTED.labels(index=job.index, outcome=outcome.value).inc(count)


def _observe_multiplier(job_id: str) -> None:
    """Record a succeeded job's ingestion multiplier once, whichever worker ran its
    finalize; a job that counted no corpus (a delete, a method without an LLM) is left
    alone, its record unwritten."""
    if _hooks.runtime_source is None:
        return
    try:
        state = _hooks.runtime_source().backends.state
        job = state.get_job(job_id)
        if job is None or not job.corpus_tokens \
                or job.state not in (JobState.SUCCEEDED, JobState.SUCCEEDED_WITH_ERRORS):
            return
        # The method labels the series; the job record names only its phases.
        info = state.get_index(job.index)
        if info is None:
            return
        job, applied = settle(state, job_id, lambda _job: None, key=MULTIPLIER_OBSERVED_KEY)
    except Exception as exc:  # a metric must never fail the task it watches
        log.warning("multiplier_not_observed", job_id=job_id, error=str(exc))
        return
    if applied:
        from hopindex.monitoring.ingest_multiplier import observe_job

        observe_job(job, info.method)
