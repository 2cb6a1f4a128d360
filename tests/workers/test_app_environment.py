"""The Celery app configures itself from the environment when nothing configured it (the
``celery`` command and Flower load it by name), and never reads the environment once a
process passed its own settings to ``configure_app``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SHOW_CONFIG = """
import json
from hopindex.workers.app import app
route = app.amqp.router.route({}, "hopindex.control.ping")
conf = app.conf
print(json.dumps({
    "broker_url": conf.broker_url,
    "eager": conf.task_always_eager,
    "queues": sorted(q.name for q in conf.task_queues),
    "ping_queue": route["queue"].name,
    "unrouted_queue": app.amqp.router.route({}, "some.other.task")["queue"].name,
    "events": [conf.worker_send_task_events, conf.task_send_sent_event],
    "hijack_root_logger": conf.worker_hijack_root_logger,
    "visibility_timeout": conf.broker_transport_options["visibility_timeout"],
}))
"""

EXPLICIT_FIRST = """
from hopindex.core.settings import Settings
from hopindex.workers.app import app, configure_app
configure_app(Settings(broker_url="redis://127.0.0.1:2/0").resolved())
print(app.conf.broker_url)
"""


def run_python(code: str, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOPINDEX_")}
    env.update(variables)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_the_app_reads_its_settings_from_the_environment_on_first_use() -> None:
    """Loaded by name, the app uses HOPINDEX_BROKER_URL (not Celery's AMQP default),
    routes a control task and any unrouted one to the control queue, declares the six
    stage queues, sends task events and leaves the root logger alone."""
    done = run_python(SHOW_CONFIG, HOPINDEX_BROKER_URL="redis://127.0.0.1:1/3",
                      HOPINDEX_VISIBILITY_TIMEOUT_S="900", HOPINDEX_TASK_TIME_LIMIT_S="600")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown == {
        "broker_url": "redis://127.0.0.1:1/3", "eager": False,
        "queues": ["control", "embed", "judge", "stage1", "stage2", "webhooks"],
        "ping_queue": "control", "unrouted_queue": "control", "events": [True, True],
        "hijack_root_logger": False, "visibility_timeout": 900}


def test_a_bad_environment_stops_the_app_naming_the_variable() -> None:
    """A misspelt variable is refused when the app loads its settings, with the name it
    was probably meant to be, rather than running on defaults."""
    done = run_python(SHOW_CONFIG, HOPINDEX_BROKER_ULR="redis://127.0.0.1:1/3")
    assert done.returncode != 0
    assert "HOPINDEX_BROKER_ULR (did you mean HOPINDEX_BROKER_URL?)" in done.stderr


def test_explicit_settings_keep_the_environment_unread() -> None:
    """``configure_app`` before any use: its broker is the one used, and a variable that
    would stop the environment's reading is never looked at."""
    done = run_python(EXPLICIT_FIRST, HOPINDEX_BROKER_ULR="redis://127.0.0.1:1/3",
                      HOPINDEX_BROKER_URL="redis://127.0.0.1:1/3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "redis://127.0.0.1:2/0"
