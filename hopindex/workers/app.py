"""The Celery app and its queues (docs/architecture.md).

The app object exists at import so tasks can register; it reads no settings
until ``configure_app`` is called by the process that owns it (CLI, worker,
tests). With no broker URL it runs tasks eagerly in the calling process.
"""

from __future__ import annotations

import importlib

from celery import Celery

from hopindex.core.settings import Settings
from hopindex.methods.plugin import PhaseKind
from hopindex.monitoring.tasks import install_task_hooks
from hopindex.scheduler.task_names import PHASE_TASKS, QUERY_TASK, REAP
from hopindex.workers.base import HopindexTask, process_runtime
from hopindex.workers.queues import ENGINE_QUEUE, ENGINE_TASK, Queue

TASK_MODULES = (
    "hopindex.workers.tasks.phases",
    "hopindex.workers.tasks.embed",
    "hopindex.workers.tasks.webhooks",
    "hopindex.workers.tasks.query",
    "hopindex.workers.tasks.engine",
    "hopindex.workers.tasks.control",
    "hopindex.workers.tasks.reaper",
)

TASK_ROUTES = {
    # A method's phases, by kind: documents on stage1, groups and levels on stage2.
    PHASE_TASKS[PhaseKind.DOCUMENTS]: {"queue": Queue.STAGE1.value},
    PHASE_TASKS[PhaseKind.GROUPS]: {"queue": Queue.STAGE2.value},
    PHASE_TASKS[PhaseKind.LEVELS]: {"queue": Queue.STAGE2.value},
    # Every write to the vector and keyword engines runs here: the embedded engines
    # allow one process, so the embed queue's worker is the one that owns them.
    "hopindex.embed": {"queue": Queue.EMBED.value},
    "hopindex.purge": {"queue": Queue.EMBED.value},
    # Other processes' calls to the embedded engines (queries, deletion, export), on a
    # queue of their own so they do not wait in line behind the embed backlog.
    ENGINE_TASK: {"queue": ENGINE_QUEUE},
    "hopindex.deliver_webhook": {"queue": Queue.WEBHOOKS.value},
    # Query methods' query-time LLM work (a batched judge), scaled on its own.
    QUERY_TASK: {"queue": Queue.JUDGE.value},
    "hopindex.control.*": {"queue": Queue.CONTROL.value},
}

app = Celery("hopindex", include=list(TASK_MODULES), task_cls=HopindexTask)


def load_tasks() -> None:
    """Register every task in this process: a worker imports ``include`` itself, but an
    eager run (no broker) sends by name and needs the tasks loaded first."""
    for module in TASK_MODULES:
        importlib.import_module(module)


def configure_app(settings: Settings) -> Celery:
    """Point the app at ``settings``' broker (or eager mode) and drop old connections."""
    eager = not settings.broker_url
    transport = {"visibility_timeout": settings.visibility_timeout_s,
                 **restore_sweep(settings.visibility_timeout_s)}
    app.conf.update(
        broker_url=settings.broker_url or "memory://",
        result_backend=None if eager else settings.broker_url,
        task_always_eager=eager,
        # Eager mode must surface task errors to the caller like a real worker's
        # failure would surface on the job record.
        task_eager_propagates=True,
        task_routes=TASK_ROUTES,
        task_default_queue=Queue.CONTROL.value,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_transport_options=transport,
        result_backend_transport_options=transport,
        broker_connection_retry_on_startup=True,
        # A worker that loses its broker reconnects (up to 100 times, a few seconds
        # apart) instead of exiting; its unacknowledged messages stay in Redis.
        broker_connection_retry=True,
        # A task publishes while it runs (its own retry, the next phase's tasks). Celery
        # gives up after about 0.6 s by default, and a retry it cannot publish drops its
        # message; waits of 0.5, 1.5, 2.5, then 3 s (16.5 s in all, far inside the
        # default task time limit) ride out a broker restart of several seconds.
        task_publish_retry_policy={"max_retries": 7, "interval_start": 0.5,
                                   "interval_step": 1.0, "interval_max": 3.0},
        task_time_limit=settings.task_time_limit_s,
        task_soft_time_limit=soft_time_limit_s(settings.task_time_limit_s),
        result_expires=86_400,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        beat_schedule={
            "reap-stalled-jobs": {"task": REAP, "schedule": float(settings.reaper_interval_s)},
        },
        hopindex_max_retries=settings.task_max_retries,
    )
    drop_connections()
    # Every task run is timed, counted and logged with its job's context.
    install_task_hooks(settings, process_runtime)
    return app


def restore_sweep(visibility_timeout_s: int) -> dict[str, int]:
    """How often workers look for messages whose worker died: a tenth of the visibility
    timeout, between 1 s and kombu's default of 100 s (interval x throttle).

    At kombu's default a message waits up to 100 s more after its visibility timeout,
    which would dwarf a short timeout (tests use 20 s); the sweep is one sorted-set
    range query, cheap at any of these rates.
    """
    sweep_s = max(1, min(100, visibility_timeout_s // 10))
    interval_s = min(10, sweep_s)
    return {"unacked_restore_interval": interval_s,
            "unacked_restore_throttle": max(1, sweep_s // interval_s)}


def soft_time_limit_s(hard_s: int) -> int:
    """The soft limit leaves a task a tenth of its hard limit (at most 30 s) to clean up.

    A fixed 30 s grace would leave a short hard limit (tests use 15 s) a soft limit
    of nothing, failing every task at once.
    """
    return max(1, hard_s - min(30, max(1, hard_s // 10)))


def drop_connections() -> None:
    """Forget the broker pools and result backend built for earlier settings.

    Celery caches them on first use; a process (a test session) that configures the
    app for a second broker would otherwise keep talking to the first. Called again
    when a service closes, so no connection outlives the Redis it points at.
    """
    _release_result_subscriptions()
    # Celery has no public reset for these caches; see the docstring.
    app._pool = None
    # The producer pool holds connections of its own: left alone, messages would
    # still go to the broker of the first configuration (memory:// after an eager run).
    amqp = app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None
    app._backend_cache = None
    local = app._local
    if hasattr(local, "backend"):
        del local.backend


def _release_result_subscriptions() -> None:
    """Unsubscribe from the results of every task this process sent.

    The Redis result backend subscribes to each sent task's result, and an
    ``AsyncResult`` unsubscribes when it is garbage-collected, which may be after its
    Redis is gone: the failed reconnect then raises inside the collector, wherever it
    happens to run. Submitters read the job record, never results, so dropping the
    subscriptions here loses nothing and leaves those late unsubscribes nothing to send.
    """
    backends = {id(b): b for b in (app._backend_cache, getattr(app._local, "backend", None))
                if b is not None}
    for backend in backends.values():
        consumer = getattr(backend, "result_consumer", None)
        if consumer is None:
            continue
        consumer.subscribed_to.clear()
        consumer.stop()
