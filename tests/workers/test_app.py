"""The Celery app follows the settings it was last configured with."""

from __future__ import annotations

import gc
import shutil
import sys
from pathlib import Path

import pytest

from hopindex.core.settings import Settings
from hopindex.testing.redis_server import running_redis
from hopindex.workers.app import (
    configure_app,
    drop_connections,
    restore_sweep,
    soft_time_limit_s,
)
from hopindex.workers.tasks.control import ping


def test_soft_limit_leaves_a_tenth_of_the_hard_limit_at_most_30_s() -> None:
    """A short hard limit keeps a usable soft limit (15 s gives 14 s, not 1 s)."""
    assert soft_time_limit_s(15) == 14
    assert soft_time_limit_s(120) == 108
    assert soft_time_limit_s(1800) == 1770
    assert soft_time_limit_s(1) == 1


def test_dead_workers_messages_are_swept_at_a_tenth_of_the_visibility_timeout() -> None:
    """The default timeout keeps kombu's 100 s sweep; a short one is swept in seconds."""
    assert restore_sweep(3600) == {"unacked_restore_interval": 10,
                                   "unacked_restore_throttle": 10}
    assert restore_sweep(20) == {"unacked_restore_interval": 2, "unacked_restore_throttle": 1}
    assert restore_sweep(5) == {"unacked_restore_interval": 1, "unacked_restore_throttle": 1}


def test_reconfiguring_sends_messages_to_the_new_broker(tmp_path: Path) -> None:
    """After an eager configuration, a broker configuration publishes to that broker:
    the producer pool built for the first must not survive (it sent every message of
    a later distributed ingest to memory://)."""
    app = configure_app(Settings(data_dir=tmp_path).resolved())
    with app.producer_or_acquire() as producer:
        assert producer.connection.transport_cls == "memory"
    url = "redis://127.0.0.1:1/0"
    app = configure_app(Settings(data_dir=tmp_path, broker_url=url,
                                 state_url=f"sqlite://{tmp_path}/s.sqlite3").resolved())
    try:
        assert app.amqp.producer_pool.connections.connection.as_uri().startswith("redis://")
        assert app.conf.task_soft_time_limit == soft_time_limit_s(app.conf.task_time_limit)
    finally:
        configure_app(Settings(data_dir=tmp_path).resolved())


@pytest.mark.integration
def test_results_of_sent_tasks_outlive_their_redis_quietly(tmp_path: Path) -> None:
    """A submitter's task results, collected after its Redis stopped, raise nothing:
    closing drops the result subscriptions while Redis still answers (the late
    unsubscribe once crashed pytest's session from inside the garbage collector)."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    raised: list[BaseException | None] = []
    previous_hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: raised.append(unraisable.exc_value)
    try:
        with running_redis("redis://127.0.0.1:1/0", database=0) as (url, _):
            configure_app(Settings(data_dir=tmp_path, broker_url=url, state_url=url).resolved())
            sent = [ping.apply_async((i,)) for i in range(3)]
            sent_ids = [r.id for r in sent]
            drop_connections()
        del sent
        gc.collect()
    finally:
        sys.unraisablehook = previous_hook
        configure_app(Settings(data_dir=tmp_path).resolved())
    assert len(sent_ids) == 3
    assert raised == []
