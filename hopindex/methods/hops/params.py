"""The ``hops`` query method's parameters, with the defaults chosen on the three
development sets (docs/methods.md, "Second hops without an LLM")."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hopindex.methods.base import ParamValue
from hopindex.methods.query_params import (
    check_bounds,
    params_as_dict,
    params_schema,
    read_params,
)


class Named(enum.StrEnum):
    """Whether hop-1 documents whose title the question names get a list of their own."""

    OFF = "off"
    TITLES = "titles"


class Walk(enum.StrEnum):
    """The hop-2 step from the seed documents."""

    OFF = "off"
    BRIDGES = "bridges"  # seed → its bridge units, scored against the question → neighbours


class Feedback(enum.StrEnum):
    """Dense pseudo-relevance feedback: one more vector search."""

    OFF = "off"
    DENSE = "dense"  # the question's vector moved towards the top hop-1 passages' vectors


class Chain(enum.StrEnum):
    """Later hops by co-mention (``neighbours.py``)."""

    OFF = "off"
    MENTIONS = "mentions"  # the question searched again among documents sharing an entity
    BRIDGES = "bridges"  # the bridge walk again, from the best documents it reached


@dataclass(frozen=True, slots=True)
class HopsParams:
    named: Named = Named.TITLES
    walk: Walk = Walk.BRIDGES
    feedback: Feedback = Feedback.OFF
    # Top hop-1 documents the walk starts from, besides named ones. 1, not 3: hop 1's
    # second and third places are mostly look-alikes, whose bridges lead astray (R@2
    # rose on all three development sets; BENCHMARKS.md).
    seeds: int = 1
    hop1_weight: float = 1.0
    named_weight: float = 1.0
    walk_weight: float = 0.3
    feedback_weight: float = 0.5
    feedback_docs: int = 3  # passages whose vectors move the question's
    feedback_beta: float = 0.5  # how far: q + beta * mean(passages)
    # The usual constant (Cormack et al., 2009); 5 kept hop 1's order more and found
    # fewer second hops (2Wiki-100 R@5 0.948 against 0.978; BENCHMARKS.md).
    rrf_k: int = 60
    walk_docs: int = 5  # documents the walk's list keeps
    # A bridge's documents other than its entity's own page: 0 keeps only the page (0.5
    # cost R@5 on both development sets; BENCHMARKS.md).
    sibling_factor: float = 0.0
    chain: Chain = Chain.BRIDGES
    chain_seeds: int = 1  # documents of one hop the next starts from
    chain_hops: int = 3  # the last hop: 3, or 4 for longer chains (2: no chain)
    chain_weight: float = 0.5  # hop 2's list (``mentions`` only)
    deep_weight: float = 0.1  # each list beyond hop 2: low, so 2-hop answers stay put
    max_entity_docs: int = 50  # ``mentions``: entities named by more are not followed

    def __post_init__(self) -> None:
        check_bounds(self, _BOUNDS)

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        return params_schema(cls, bounds=_BOUNDS, enums=_ENUMS)

    @classmethod
    def from_params(cls, params: Mapping[str, ParamValue]) -> HopsParams:
        return read_params(cls, params, method="hops", enums=_ENUMS)

    def as_dict(self) -> dict[str, Any]:
        return params_as_dict(self)


_BOUNDS: dict[str, tuple[float, float]] = {
    "seeds": (0, 20), "feedback_docs": (1, 20), "rrf_k": (1, 1000),
    "feedback_beta": (0.0, 10.0), "walk_docs": (1, 50), "sibling_factor": (0.0, 1.0),
    "chain_seeds": (1, 20), "chain_hops": (2, 4), "max_entity_docs": (2, 10_000),
    "chain_weight": (0.0, 10.0), "deep_weight": (0.0, 10.0),
    **dict.fromkeys(("hop1_weight", "named_weight", "walk_weight", "feedback_weight"),
                    (0.0, 10.0)),
}

_ENUMS: dict[str, type[enum.StrEnum]] = {"named": Named, "walk": Walk, "feedback": Feedback,
                                          "chain": Chain}
