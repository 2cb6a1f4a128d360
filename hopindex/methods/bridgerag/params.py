"""BridgeRAG's query parameters: the paper's numbers as defaults, each one overridable.

They arrive as ``QueryOptions.params`` (``hopindex query --param KEY=VALUE``, the HTTP
API's ``params`` object, ``hopindex eval --method bridgerag:KEY=VALUE``): strings from
a command line, numbers and strings from JSON. A bad value is an ``InvalidInputError``
naming ``params.KEY``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.methods.base import ParamValue


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
    passage_chars: int = 700  # every passage shown to the model is cut here
    hop1_k: int = 5
    svo_k: int = 10  # hits per SVO query
    svo_keep: int = 15  # SVO-15: the merged SVO hits kept for the pool
    entity_k: int = 5  # hits per entity
    pool_size: int = 20
    bridge_position: BridgePosition = BridgePosition.POOL
    # None: the setting HOPINDEX_BRIDGERAG_RECORDS decides.
    record: DecisionRecords | None = None

    def __post_init__(self) -> None:
        for name, (low, high) in _BOUNDS.items():
            value = getattr(self, name)
            _require(low <= value <= high, name, f"must be between {low:g} and {high:g}, "
                                                 f"got {value}")
        _require(self.bridges <= self.hop1_k, "bridges",
                 f"cannot exceed hop1_k ({self.hop1_k}), got {self.bridges}")

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The parameters as a JSON Schema object (the HTTP API's ``options``): each
        number with its bounds, each choice with its values (either case)."""
        properties: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in _ENUMS:
                values = [m.value for m in _ENUMS[f.name]]
                properties[f.name] = {"type": "string", "enum": sorted(
                    {*values, *(v.lower() for v in values), *(v.upper() for v in values)})}
            else:
                low, high = _BOUNDS[f.name]
                kind = "integer" if isinstance(f.default, int) else "number"
                properties[f.name] = {"type": kind, "minimum": low, "maximum": high}
        return {"type": "object", "properties": properties, "additionalProperties": False,
                # bridges may not exceed hop1_k (default 5)
                "if": {"required": ["bridges"], "properties": {"bridges": {"const": 2}}},
                "then": {"properties": {"hop1_k": {"minimum": 2}}}}

    @classmethod
    def from_params(cls, params: Mapping[str, ParamValue]) -> BridgeRagParams:
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for name, raw in params.items():
            if name not in known:
                raise InvalidInputError(f"unknown bridgerag parameter; known: "
                                        f"{', '.join(known)}", where=f"params.{name}")
            values[name] = _convert(name, raw, known[name].default)
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            values[f.name] = value.value if isinstance(value, enum.Enum) else value
        return values


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


def _convert(name: str, raw: ParamValue, default: object) -> object:
    where = f"params.{name}"
    if name in _ENUMS:
        choices = _ENUMS[name]
        text = str(raw).strip()
        for member in choices:
            if text.casefold() == member.value.casefold():
                return member
        raise InvalidInputError(f"must be one of {', '.join(m.value for m in choices)}, "
                                f"got {raw!r}", where=where)
    if isinstance(raw, bool):
        raise InvalidInputError(f"must be a number, got {raw!r}", where=where)
    if isinstance(default, int):
        if isinstance(raw, float) and not raw.is_integer():
            raise InvalidInputError(f"must be an integer, got {raw!r}", where=where)
        try:
            return int(raw)
        except ValueError:
            raise InvalidInputError(f"must be an integer, got {raw!r}", where=where) from None
    try:
        return float(raw)
    except ValueError:
        raise InvalidInputError(f"must be a number, got {raw!r}", where=where) from None


def _require(ok: bool, name: str, message: str) -> None:
    if not ok:
        raise InvalidInputError(message, where=f"params.{name}")
