"""Span ids chosen ahead of their span: a job's span and each step's span.

A job and each of its steps (a phase's fan-out, an embed step) run across processes
and hours, but a span is created and ended by one process. Their ids are therefore
fixed when the work starts (the job's at submit, stored on its record; a step's from
the job's trace id and the step's name), the tasks are sent as their children, and
the span itself is written once, when the work ends, with those ids
(``preset_ids``) and the recorded start time.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.id_generator import IdGenerator

# (trace id, span id) the next span this thread starts takes; 0 keeps it random.
_preset: ContextVar[tuple[int, int] | None] = ContextVar("hopindex_preset_ids", default=None)


def preset_id_generator() -> IdGenerator:
    """Random ids, as the SDK's own generator makes them, unless ``preset_ids`` is in
    force (the SDK is imported here, when tracing is on)."""
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class PresetIdGenerator(IdGenerator):
        def generate_span_id(self) -> int:
            preset = _preset.get()
            if preset is not None and preset[1]:
                return preset[1]
            return new_span_id()

        def generate_trace_id(self) -> int:
            preset = _preset.get()
            if preset is not None and preset[0]:
                return preset[0]
            return new_trace_id()

    return PresetIdGenerator()


@contextlib.contextmanager
def preset_ids(trace_id: int, span_id: int) -> Iterator[None]:
    """The span started inside takes ``span_id`` (and ``trace_id`` when it is a root)."""
    token = _preset.set((trace_id, span_id))
    try:
        yield
    finally:
        _preset.reset(token)


def new_span_id() -> int:
    # The random module's generator, as the SDK's own ids: Python reseeds it in a
    # forked child, so two pool processes never draw the same ids.
    return random.getrandbits(64) or 1  # ids, not secrets


def new_trace_id() -> int:
    return random.getrandbits(128) or 1  # ids, not secrets


def step_span_id(trace_id: int, job_id: str, step: str) -> int:
    """The span id of a job's ``step``: the same in every process that meets it (the
    submitter, the worker that plans it, the reaper that re-drives it)."""
    digest = hashlib.blake2b(f"{trace_id:032x}/{job_id}/{step}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big") or 1
