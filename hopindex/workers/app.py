"""The Celery app and its queues (docs/architecture.md).

The app object exists at import so tasks can register. Its configuration comes from
one of two places, whichever is first:

- ``configure_app(settings)``: the process that owns the app (``hopindex`` commands,
  the service, tests) passes the settings it already read;
- otherwise the environment, read once when the app's configuration is first used:
  that is how ``celery -A hopindex.workers.app worker|inspect|events|call|purge`` and
  Flower find the broker, queues and routes, the way every Celery app configures itself.

With no broker URL it runs tasks eagerly in the calling process.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import replace
from typing import Any

from celery import Celery, signals
from kombu.entity import Exchange as KombuExchange
from kombu.entity import Queue as KombuQueue

from hopindex.core.logging import configure_process_logging, level_number
from hopindex.core.settings import LogLevel, Settings
from hopindex.methods.plugin import PhaseKind
from hopindex.methods.registry import load_settings
from hopindex.monitoring.task_traces import install_trace_hooks
from hopindex.monitoring.tasks import install_task_hooks
from hopindex.scheduler.task_names import PHASE_TASKS, POLL_BATCHES, QUERY_TASK, REAP
from hopindex.workers.base import HopindexTask, process_runtime
from hopindex.workers.preload import preload_task_modules
from hopindex.workers.queues import ENGINE_QUEUE, ENGINE_TASK, Queue

TASK_MODULES = (
    "hopindex.workers.tasks.phases",
    "hopindex.workers.tasks.embed",
    "hopindex.workers.tasks.webhooks",
    "hopindex.workers.tasks.query",
    "hopindex.workers.tasks.engine",
    "hopindex.workers.tasks.control",
    "hopindex.workers.tasks.reaper",
    "hopindex.workers.tasks.batches",
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

# The queues a worker started without ``-Q`` takes, and ``celery purge`` empties: the six
# stage queues. Not the engine queue: only the engine owner may take it (``hopindex
# worker --queues embed`` adds it), and a plain worker taking it would answer other
# processes' engine calls with "not the owner". Each is declared as Celery declares a
# queue a route names (a direct exchange of its own name), so the bindings in Redis are
# the same either way.
TASK_QUEUES = tuple(
    KombuQueue(q.value, KombuExchange(q.value), routing_key=q.value)  # type: ignore[no-untyped-call]  # kombu is untyped
    for q in Queue)

app = Celery("hopindex", include=list(TASK_MODULES), task_cls=HopindexTask)


class _AppState:
    """The settings the app was configured with, by ``configure_app`` or from the
    environment."""

    settings: Settings | None = None


_state = _AppState()


def load_tasks() -> None:
    """Register every task in this process: a worker imports ``include`` itself, but an
    eager run (no broker) sends by name and needs the tasks loaded first."""
    for module in TASK_MODULES:
        importlib.import_module(module)


def configure_app(settings: Settings) -> Celery:
    """Point the app at ``settings``' broker (or eager mode) and drop old connections."""
    # Before the first read of app.conf, which would otherwise load the environment.
    _state.settings = settings
    app.conf.update(celery_config(settings))
    drop_connections()
    # Every task run is timed, counted and logged with its job's context, and traced.
    install_task_hooks(settings, process_runtime)
    install_trace_hooks()
    return app


def celery_config(settings: Settings) -> dict[str, Any]:
    """Celery's settings for ``settings``."""
    eager = not settings.broker_url
    transport = {"visibility_timeout": settings.visibility_timeout_s,
                 **restore_sweep(settings.visibility_timeout_s)}
    return {
        # A host in the URL: kombu warns "No hostname was supplied" for a bare memory://.
        "broker_url": settings.broker_url or "memory://localhost/",
        "result_backend": None if eager else settings.broker_url,
        "task_always_eager": eager,
        # Eager mode must surface task errors to the caller like a real worker's
        # failure would surface on the job record.
        "task_eager_propagates": True,
        "task_queues": TASK_QUEUES,
        "task_routes": TASK_ROUTES,
        # Where a task no route names goes (``celery call`` of one): a queue workers take.
        "task_default_queue": Queue.CONTROL.value,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        # Task events (sent, received, started, succeeded, failed) for Flower and
        # ``celery events``: a publish per step, to a fanout nothing stores unless a
        # monitor listens.
        "worker_send_task_events": True,
        "task_send_sent_event": True,
        # Logging is hopindex's (the setup_logging receiver below): Celery must not
        # replace the root logger's handlers with its plain-text ones.
        "worker_hijack_root_logger": False,
        "broker_transport_options": transport,
        "result_backend_transport_options": transport,
        "broker_connection_retry_on_startup": True,
        # A worker that loses its broker reconnects (up to 100 times, a few seconds
        # apart) instead of exiting; its unacknowledged messages stay in Redis.
        "broker_connection_retry": True,
        # A task publishes while it runs (its own retry, the next phase's tasks). Celery
        # gives up after about 0.6 s by default, and a retry it cannot publish drops its
        # message; waits of 0.5, 1.5, 2.5, then 3 s (16.5 s in all, far inside the
        # default task time limit) ride out a broker restart of several seconds.
        "task_publish_retry_policy": {"max_retries": 7, "interval_start": 0.5,
                                      "interval_step": 1.0, "interval_max": 3.0},
        "task_time_limit": settings.task_time_limit_s,
        "task_soft_time_limit": soft_time_limit_s(settings.task_time_limit_s),
        "result_expires": 86_400,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "beat_schedule": {
            "reap-stalled-jobs": {"task": REAP, "schedule": float(settings.reaper_interval_s)},
            "poll-provider-batches": {"task": POLL_BATCHES,
                                      "schedule": float(settings.llm_batch_poll_interval_s)},
        },
        "hopindex_max_retries": settings.task_max_retries,
    }


def _config_from_environment() -> dict[str, Any]:
    """The app's configuration when no ``configure_app`` came first: the settings read
    from the environment.

    Settings are otherwise never read implicitly. The app is the exception because the
    ``celery`` command and Flower load it by name (``-A hopindex.workers.app``) and use
    it as it is, with no hopindex code of theirs to pass settings in; without this they
    fall back to an AMQP broker on localhost and the default ``celery`` queue. Nothing is
    read at import: Celery calls this on the first read of ``app.conf``, so a process
    that calls ``configure_app`` first never reads the environment here.
    """
    if _state.settings is not None:
        return {}
    settings = load_settings()
    _state.settings = settings
    install_task_hooks(settings, process_runtime)
    install_trace_hooks()
    return celery_config(settings)


app.add_defaults(_config_from_environment)


def app_settings() -> Settings:
    """The settings the app runs with: ``configure_app``'s, else the environment's."""
    if _state.settings is None:
        _ = app.conf.broker_url  # the first read of the configuration loads it
    assert _state.settings is not None  # set by configure_app or the first read above
    return _state.settings


def _setup_logging(loglevel: int | str | None = None, **_: Any) -> None:
    """A Celery program (worker, beat) sets up its logging: hopindex's, not Celery's.

    With a receiver here Celery neither replaces the root logger's handlers nor
    redirects stdout and stderr (hopindex's JSON format does that itself). The level is
    the more verbose of the settings' and the program's ``--loglevel``, so
    ``celery ... worker -l INFO`` is heard whatever HOPINDEX_LOG_LEVEL says. Celery's
    ``--logfile`` is not honoured: hopindex logs to stderr.
    """
    settings = app_settings()
    wanted = _log_level(loglevel)
    if wanted is not None and level_number(wanted) < level_number(settings.log_level):
        settings = replace(settings, log_level=wanted)
    configure_process_logging(settings)


def _log_level(loglevel: int | str | None) -> LogLevel | None:
    """Celery's level (a number, or a name) as the nearest ``LogLevel`` at or below it."""
    if loglevel is None or loglevel == "":
        return None
    number = (loglevel if isinstance(loglevel, int)
              else logging.getLevelNamesMapping().get(str(loglevel).upper()))
    if number is None:
        return None
    fitting = [lv for lv in LogLevel if level_number(lv) <= number]
    return max(fitting, key=level_number) if fitting else LogLevel.DEBUG


def _worker_init(options: dict[str, Any] | None = None, **_: Any) -> None:
    """A worker's first moment, before Celery checks its privileges (a warning) or sets
    up logging: hopindex's logging from here on, so no line escapes the format. Then,
    before the pool starts, the modules its tasks would import on first use
    (workers/preload.py)."""
    _setup_logging(loglevel=(options or {}).get("loglevel"))
    queues = (options or {}).get("queues")
    preload_task_modules(queues.split(",") if isinstance(queues, str) else queues)


signals.setup_logging.connect(_setup_logging, weak=False,
                              dispatch_uid="hopindex.workers.app.setup_logging")
signals.celeryd_init.connect(_worker_init, weak=False,
                             dispatch_uid="hopindex.workers.app.worker_init")


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
