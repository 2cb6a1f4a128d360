"""Fan-out helpers over Celery canvas primitives."""

from __future__ import annotations

from typing import Any

from celery import chord


def fan_out(header: list[Any], callback: Any) -> None:
    """Run ``header`` in parallel, then ``callback`` with their results.

    An empty chord header is legal in Celery but runs its body with no
    arguments in some result backends; call the body directly instead.
    """
    if header:
        chord(header)(callback)
    else:
        callback.clone(args=([],)).apply_async()
