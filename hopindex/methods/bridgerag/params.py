"""BridgeRAG's query parameters: the paper's numbers as defaults, each one overridable.

They arrive as ``QueryOptions.params`` (``hopindex query --param KEY=VALUE``, the HTTP
API's ``params`` object, ``hopindex eval --method bridgerag:KEY=VALUE``): strings from
a command line, numbers and strings from JSON. A bad value is an ``InvalidInputError``
naming ``params.KEY``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hopindex.core.errors import ConfigError
from hopindex.methods.base import ParamValue
from hopindex.methods.query_params import (
    check_bounds,
    params_as_dict,
    params_schema,
    read_params,
    require_param,
)


class DecisionRecords(enum.StrEnum):
    """Where bridgerag keeps each query's decision record besides its trace."""

    OFF = "off"
    JSONL = "jsonl"  # one line per query in $DATA_DIR/decisions/INDEX.jsonl


@dataclass(frozen=True, slots=True)
class BridgeRagSettings:
    """``HOPINDEX_BRIDGERAG_JUDGE_TIMEOUT_S``: with a broker, how long a query waits for
    its judge task on the judge queue, then ranks by SVO similarity (condition A) and
    says so; ``HOPINDEX_BRIDGERAG_RECORDS``: off, or jsonl decision records."""

    judge_timeout_s: float = 30.0
    # The paper persists a record per query; every query returns its record in the
    # trace, and appending it to a file is asked for (departure: a file that grows
    # with every query is the operator's choice).
    records: DecisionRecords = DecisionRecords.OFF

    def __post_init__(self) -> None:
        if not self.judge_timeout_s > 0:
            raise ConfigError("HOPINDEX_BRIDGERAG_JUDGE_TIMEOUT_S must be a positive number "
                              f"of seconds, got {self.judge_timeout_s}")


class Condition(enum.StrEnum):
    """The paper's ablation conditions (§5.4), all over the same pool."""

    A = "A"  # the pool ranked by SVO similarity; no judge call
    B = "B"  # judge s(q, c): neither bridge nor entities in the prompt
    C = "C"  # judge s(q, b, c): the full method


class Extraction(enum.StrEnum):
    """How the SVO queries and the two entities are asked for."""

    SEPARATE = "separate"  # two calls, as in the paper (3 calls per query)
    MERGED = "merged"  # one call returns both: they read the same inputs (2 calls per query)


class BridgePosition(enum.StrEnum):
    """Where the hop-1 bridge goes in the answer."""

    POOL = "pool"  # only where the pool puts it, like any candidate (the paper)
    FIRST = "first"  # rank 1, then the fused pool without it


@dataclass(frozen=True, slots=True)
class BridgeRagParams:
    condition: Condition = Condition.C
    extraction: Extraction = Extraction.SEPARATE
    bridges: int = 1  # hop-1 passages shown to the judge (2: the paper's future work)
    alpha: float = 0.1  # weight of PIT(SVO) against PIT(judge)
    # Every passage shown to the model is cut here (departure: the paper states no cut;
    # 20 candidates of 700 characters keep the judge prompt near its 4,000-6,000 tokens).
    passage_chars: int = 700
    hop1_k: int = 5
    svo_k: int = 10  # hits per SVO query
    svo_keep: int = 15  # SVO-15: the merged SVO hits kept for the pool
    entity_k: int = 5  # hits per entity
    pool_size: int = 20
    bridge_position: BridgePosition = BridgePosition.POOL
    # None: the setting HOPINDEX_BRIDGERAG_RECORDS decides.
    record: DecisionRecords | None = None

    def __post_init__(self) -> None:
        check_bounds(self, _BOUNDS)
        require_param(self.bridges <= self.hop1_k, "bridges",
                      f"cannot exceed hop1_k ({self.hop1_k}), got {self.bridges}")

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The parameters as a JSON Schema object (the HTTP API's ``options``)."""
        return {**params_schema(cls, bounds=_BOUNDS, enums=_ENUMS),
                # bridges may not exceed hop1_k (default 5)
                "if": {"required": ["bridges"], "properties": {"bridges": {"const": 2}}},
                "then": {"properties": {"hop1_k": {"minimum": 2}}}}

    @classmethod
    def from_params(cls, params: Mapping[str, ParamValue]) -> BridgeRagParams:
        return read_params(cls, params, method="bridgerag", enums=_ENUMS)

    def as_dict(self) -> dict[str, Any]:
        return params_as_dict(self)


# What `hopindex eval --method bridgerag` compares, and the shorthands of
# `--method bridgerag:NAME`: the paper's conditions and this project's two additions.
EVAL_VARIANTS: dict[str, dict[str, str]] = {
    "A": {"condition": Condition.A.value},
    "B": {"condition": Condition.B.value},
    "C": {},
    "merged": {"extraction": Extraction.MERGED.value},
    "bridges2": {"bridges": "2"},
}

# The numeric parameters' bounds, inclusive.
_BOUNDS: dict[str, tuple[float, float]] = {
    "bridges": (1, 2), "alpha": (0.0, 1.0), "passage_chars": (50, 20_000),
    **dict.fromkeys(("hop1_k", "svo_k", "svo_keep", "entity_k", "pool_size"), (1, 100)),
}

_ENUMS: dict[str, type[enum.StrEnum]] = {
    "condition": Condition, "extraction": Extraction, "bridge_position": BridgePosition,
    "record": DecisionRecords,
}

