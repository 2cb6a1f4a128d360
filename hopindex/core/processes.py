"""Facts about operating-system processes that several owners of things need."""

from __future__ import annotations

import os


def pid_exists(pid: int) -> bool:
    """True unless no process with ``pid`` exists on this host (signal 0 probes it;
    a process of another user answers with a permission error, and is alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
