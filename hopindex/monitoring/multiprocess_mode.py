"""Whether this process is in prometheus_client's multiprocess mode.

``multiprocess.prepare_multiprocess`` switches a worker into it by setting the
variable; ``exposition`` reads it to decide what a scrape serves. Both need it and
neither may import the other for it: ``exposition`` imports prometheus_client at
module level, which ``multiprocess`` must not do before the mode is set.
"""

from __future__ import annotations

import os

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def in_multiprocess_mode() -> bool:
    """True when the variable is set (non-empty): a worker that prepared its metrics directory."""
    return bool(os.environ.get(MULTIPROC_ENV))
