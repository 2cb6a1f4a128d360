"""What every query method takes and returns, and the method registry."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from hopindex.backends.protocols import Embedder, KeywordIndex, UnitStore, VectorStore
from hopindex.core.errors import InvalidInputError
from hopindex.methods.retrieval.fusion import FusionMode

MAX_K = 100
DEFAULT_CANDIDATES = 50
MAX_CANDIDATES = 1000


class Retrieval(enum.StrEnum):
    DENSE = "dense"
    KEYWORD = "keyword"
    HYBRID = "hybrid"


@dataclass(frozen=True, slots=True)
class QueryOptions:
    k: int = 5
    retrieval: Retrieval | None = None  # None: the method's own default
    fusion: FusionMode = FusionMode.RRF
    # Hits fetched from each engine before fusion; None: 50, or k when k is larger.
    candidates: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.k <= MAX_K:
            raise InvalidInputError(f"k must be between 1 and {MAX_K}, got {self.k}", where="k")
        if self.candidates is not None and not self.k <= self.candidates <= MAX_CANDIDATES:
            raise InvalidInputError(f"candidates must be between k ({self.k}) and "
                                    f"{MAX_CANDIDATES}, got {self.candidates}",
                                    where="candidates")

    @property
    def candidate_count(self) -> int:
        return self.candidates if self.candidates is not None else max(DEFAULT_CANDIDATES,
                                                                       self.k)


@dataclass(frozen=True, slots=True)
class RankedPassage:
    """A source passage in the answer, with the units that led to it (provenance)."""

    rank: int
    doc_id: str
    title: str
    text: str
    score: float
    via_unit_id: str
    via_kind: str
    via_text: str = ""


@dataclass(slots=True)
class QueryUsage:
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    phases_s: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"llm_calls": self.llm_calls, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cache_hits": self.cache_hits,
                "phases_s": {k: round(v, 6) for k, v in self.phases_s.items()}}


@dataclass(slots=True)
class QueryResult:
    question: str
    method: str
    index: str
    passages: list[RankedPassage]
    answer: str | None = None
    trace: dict[str, Any] = field(default_factory=dict)
    usage: QueryUsage = field(default_factory=QueryUsage)
    latency_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "question": self.question, "method": self.method, "index": self.index,
            "answer": self.answer,
            "passages": [
                {"rank": p.rank, "doc_id": p.doc_id, "title": p.title, "text": p.text,
                 "score": p.score, "via": {"unit_id": p.via_unit_id, "kind": p.via_kind,
                                           "text": p.via_text}}
                for p in self.passages
            ],
            "trace": self.trace, "usage": self.usage.as_dict(),
            "latency_s": round(self.latency_s, 6),
        }


@dataclass(frozen=True, slots=True)
class SearchContext:
    """The protocol objects a query method reads; never a concrete backend."""

    vectors: VectorStore
    keywords: KeywordIndex
    units: UnitStore
    embedder: Embedder


class QueryMethod(Protocol):
    name: str

    def run_query(self, index: str, question: str, options: QueryOptions) -> QueryResult: ...


MethodFactory = Callable[[SearchContext], QueryMethod]

_METHODS: dict[str, MethodFactory] = {}


def register_method(name: str, factory: MethodFactory) -> None:
    _METHODS[name] = factory


def method_names() -> list[str]:
    _load_builtin_methods()
    return sorted(_METHODS)


def create_method(name: str, context: SearchContext) -> QueryMethod:
    _load_builtin_methods()
    try:
        factory = _METHODS[name]
    except KeyError:
        raise InvalidInputError(f"unknown method {name!r}; known: {', '.join(sorted(_METHODS))}",
                                where="method") from None
    return factory(context)


def _load_builtin_methods() -> None:
    # Imported here so each method module registers itself without import cycles.
    from hopindex.methods import extractive, naive  # noqa: F401  # registration side effect
