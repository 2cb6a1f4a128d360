"""Loads the scale harness's task log into every Python process started with this
folder on ``PYTHONPATH`` (the harness's worker processes): Python imports
``sitecustomize`` at start-up, before the worker's own code. See ../task_log.py."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from task_log import install_from_env

install_from_env()
