"""Waiting in tests: on a condition, with a deadline, never for a fixed time.

The helpers live in ``hopindex.testing.waiting`` (the shipped contract suites wait
with them too); how and why tests wait is explained there.
"""

from hopindex.testing.waiting import DEFAULT_INTERVAL_S, DEFAULT_TIMEOUT_S, settled, wait_until

__all__ = ["DEFAULT_INTERVAL_S", "DEFAULT_TIMEOUT_S", "settled", "wait_until"]
