"""The Celery app and its five queues (DESIGN.md §5).

The app object exists at import so tasks can register; it reads no settings
until ``configure_app`` is called by the process that owns it (CLI, worker,
tests). With no broker URL it runs tasks eagerly in the calling process.
"""

from __future__ import annotations

import enum

from celery import Celery

from hopindex.core.settings import Settings


class Queue(enum.StrEnum):
    STAGE1 = "stage1"
    STAGE2 = "stage2"
    EMBED = "embed"
    JUDGE = "judge"
    CONTROL = "control"


TASK_MODULES = (
    "hopindex.workers.tasks.stage1",
    "hopindex.workers.tasks.embed",
    "hopindex.workers.tasks.link",
    "hopindex.workers.tasks.stage2",
    "hopindex.scheduler.control",
)

TASK_ROUTES = {
    "hopindex.stage1": {"queue": Queue.STAGE1.value},
    "hopindex.link": {"queue": Queue.STAGE1.value},
    "hopindex.stage2": {"queue": Queue.STAGE2.value},
    "hopindex.embed": {"queue": Queue.EMBED.value},
    "hopindex.control.*": {"queue": Queue.CONTROL.value},
}

app = Celery("hopindex", include=list(TASK_MODULES))


def configure_app(settings: Settings) -> Celery:
    eager = not settings.broker_url
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
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
    )
    return app
