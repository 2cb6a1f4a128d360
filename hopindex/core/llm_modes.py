"""A job's LLM mode: how its index-time LLM calls are made (``LlmMode``, core/settings.py).

A job runs in the mode its request gives; else in its index's default, which the
index's options keep under ``INDEX_OPTION``; else in ``Settings.llm_mode``. An ingest,
a repair, a rebuild and a dry run resolve it alike, whichever door asked, and a bad
value is refused alike: naming the field and the modes there are.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hopindex.core.errors import InvalidInputError
from hopindex.core.settings import LlmMode

# The request field, query parameter and argument that gives a job's mode; the key of
# the index's default in its options is the same word.
LLM_MODE = "llm_mode"
INDEX_OPTION = LLM_MODE
CHOICES = tuple(mode.value for mode in LlmMode)


class ModeSource(enum.StrEnum):
    """Where a job's mode came from."""

    REQUEST = "request"  # the ingest, repair or rebuild named it
    INDEX = "index"  # the index's default
    SETTINGS = "settings"  # HOPINDEX_LLM_MODE


def parse_llm_mode(value: Any, where: str = LLM_MODE) -> LlmMode | None:
    """A mode from user input (its name); None when not given. Anything else is an
    ``InvalidInputError`` naming ``where`` and the modes there are."""
    if value is None:
        return None
    if isinstance(value, str) and value in CHOICES:
        return LlmMode(value)
    raise InvalidInputError(f"must be one of {', '.join(CHOICES)}, got {value!r}",
                            where=where)


def index_mode(options: Mapping[str, Any]) -> LlmMode | None:
    """The default mode an index's options hold; None when it has none of its own."""
    return parse_llm_mode(options.get(INDEX_OPTION), where=INDEX_OPTION)


def with_index_mode(options: Mapping[str, Any], mode: LlmMode | None) -> dict[str, Any]:
    """``options`` with ``mode`` as the index's default (None: without one), the rest
    kept as they are (its budget, say)."""
    kept = {key: value for key, value in options.items() if key != INDEX_OPTION}
    if mode is not None:
        kept[INDEX_OPTION] = mode.value
    return kept


@dataclass(frozen=True, slots=True)
class JobMode:
    mode: LlmMode
    source: ModeSource


def job_mode(asked: LlmMode | None, options: Mapping[str, Any], default: LlmMode) -> JobMode:
    """The mode a job of an index with ``options`` runs in when its request asks for
    ``asked`` (None: nothing), ``default`` being the setting's."""
    if asked is not None:
        return JobMode(asked, ModeSource.REQUEST)
    own = index_mode(options)
    if own is not None:
        return JobMode(own, ModeSource.INDEX)
    return JobMode(default, ModeSource.SETTINGS)


def batch_price(cost: float, discount: float) -> float:
    """What calls costing ``cost`` at the synchronous prices cost through the provider's
    Batch API, ``discount`` (``Settings.llm_batch_discount``) off."""
    return cost * (1.0 - discount)
