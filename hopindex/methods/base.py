"""What every query method takes and returns (the registry is methods/registry.py)."""

from __future__ import annotations

import enum
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from hopindex.backends.protocols import (
    DocumentStore,
    Embedder,
    EntityCatalogue,
    IndexCatalog,
    KeywordIndex,
    RecordStore,
    UnitStore,
    VectorStore,
)
from hopindex.core.citations import Citation
from hopindex.core.embedding_usage import EmbeddingUsage
from hopindex.core.errors import ConfigError, InvalidInputError, NotFoundError
from hopindex.core.models import COST_DECIMALS, Hit, LlmUsage, UnitKind, combined_cost
from hopindex.core.settings import Settings

if TYPE_CHECKING:
    # The CLI imports this module to start; the client pulls in the openai SDK.
    from hopindex.backends.llm.runner import LlmRunner
    from hopindex.backends.llm.usage import UsageMeter

MAX_K = 100
DEFAULT_CANDIDATES = 50
MAX_CANDIDATES = 1000

ParamValue = str | int | float | bool


class FusionMode(enum.StrEnum):
    RRF = "rrf"
    PERCENTILE = "percentile"
    NONE = "none"  # the first list only, as ranked by its engine


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
    # How much each engine's ranking counts in hybrid fusion (0 silences one).
    dense_weight: float = 1.0
    keyword_weight: float = 1.0
    # Method-specific knobs (bridgerag's condition=A, alpha=0.15 ...): the method that
    # reads them validates them and names a bad one; other methods ignore them.
    params: Mapping[str, ParamValue] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if not 1 <= self.k <= MAX_K:
            raise InvalidInputError(f"must be between 1 and {MAX_K}, got {self.k}", where="k")
        for name, value in self.params.items():
            if not isinstance(name, str) or not name:
                raise InvalidInputError(f"parameter names must be non-empty strings, got {name!r}",
                                        where="params")
            if not isinstance(value, str | int | float | bool):
                raise InvalidInputError(f"must be a string, number or boolean, got "
                                        f"{type(value).__name__}", where=f"params.{name}")
        if self.candidates is not None and not self.k <= self.candidates <= MAX_CANDIDATES:
            raise InvalidInputError(f"candidates must be between k ({self.k}) and "
                                    f"{MAX_CANDIDATES}, got {self.candidates}",
                                    where="candidates")
        for name in ("dense_weight", "keyword_weight"):
            weight = getattr(self, name)
            if not (math.isfinite(weight) and weight >= 0):
                raise InvalidInputError(f"{name} must be a number of 0 or more, got {weight}",
                                        where=name)
        if self.dense_weight == 0 and self.keyword_weight == 0:
            raise InvalidInputError("dense_weight and keyword_weight cannot both be 0",
                                    where="dense_weight")

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
    # Where the passage is in its file (file, page, section), for a document read from
    # a PDF, HTML, DOCX or Markdown file; None for one read from records.
    citation: Citation | None = None


@dataclass(slots=True)
class QueryUsage:
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    llm_retries: int = 0
    limiter_wait_s: float = 0.0
    phases_s: dict[str, float] = field(default_factory=dict)
    # Tokens a remote embedding provider reported for this query (0: a local model).
    embedding_tokens: int = 0
    # Money at the configured prices (see LlmUsage.cost); None: unpriced. Embedding
    # tokens join it only when HOPINDEX_EMBEDDING_PRICE_PER_MTOK is set (add_embedding).
    cost: float | None = None
    # What reading the query's LLM replies forgave (coerced, dropped, rescaled, cut
    # replies; LlmUsage.READING_FIELDS), only the counters that are not zero.
    replies: dict[str, int] = field(default_factory=dict)

    def add_llm(self, usage: LlmUsage) -> None:
        # A cost already here with no LLM call behind it is priced embeddings: a part.
        empty = not (self.llm_calls or self.cache_hits) and self.cost is None
        self.cost = combined_cost(self.cost, empty, usage.cost, usage.is_empty)
        self.llm_calls += usage.calls
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cache_hits += usage.cache_hits
        self.llm_retries += usage.retries
        self.limiter_wait_s += usage.limiter_wait_s
        for name in LlmUsage.READING_FIELDS:
            if count := getattr(usage, name):
                self.replies[name] = self.replies.get(name, 0) + count

    def add_embedding(self, usage: EmbeddingUsage) -> None:
        """The query's embedding tokens, and their cost when the embedding price is set.

        Priced embeddings combine with the LLM part as ``combined_cost`` does: an
        unpriced LLM call leaves the whole unknown (None). Unpriced embeddings, though,
        stay out of ``cost`` instead of voiding it: without an embedding price the
        operator prices the LLM alone, and its figure stays what it was, with
        ``embedding_tokens`` beside it.
        """
        self.embedding_tokens += usage.tokens
        if usage.cost is None or usage.is_empty:
            return
        empty = not (self.llm_calls or self.cache_hits) and self.cost is None
        self.cost = combined_cost(self.cost, empty, usage.cost, False)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "llm_calls": self.llm_calls, "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens, "cache_hits": self.cache_hits,
            "embedding_tokens": self.embedding_tokens, "llm_retries": self.llm_retries,
            "limiter_wait_s": round(self.limiter_wait_s, 6),
            "phases_s": {k: round(v, 6) for k, v in self.phases_s.items()}}
        if self.cost is not None:  # unpriced: no figure at all, not a zero
            data["cost"] = round(self.cost, COST_DECIMALS)
        if self.replies:
            data["replies"] = dict(self.replies)
        return data


@dataclass(frozen=True, slots=True)
class Degradation:
    """A step of a query that did not run as designed, and why (the error's message or
    the method's note): the query went on without it, or with a fallback."""

    step: str  # "answer", "decompose", "plan", "judge", "reasoning step 2", ...
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"step": self.step, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Degradation:
        return cls(step=str(data.get("step", "")), reason=str(data.get("reason", "")))


@dataclass(frozen=True, slots=True)
class QueryWarning:
    """Something the caller should know about what the answer rests on (an index that
    is not fully built, say): the query ran as designed, unlike a ``Degradation``."""

    code: str  # "index_partial", "index_building", ...
    message: str  # for people: what is wrong and what fixes it

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueryWarning:
        return cls(code=str(data.get("code", "")), message=str(data.get("message", "")))


@dataclass(slots=True)
class QueryResult:
    question: str
    method: str
    index: str
    passages: list[RankedPassage]
    answer: str | None = None
    trace: dict[str, Any] = field(default_factory=dict)
    usage: QueryUsage = field(default_factory=QueryUsage)
    # The query's own time: never the embedding model's load (embedder_load_s).
    latency_s: float = 0.0
    # Every step that degraded, LLM or not; the passages are returned whatever failed.
    degraded: list[Degradation] = field(default_factory=list)
    # The answer reply was cut at its token budget (finish_reason "length"): kept as is.
    answer_truncated: bool = False
    # Seconds the query waited for the embedding model to load and warm up (its first
    # use in the process; 0 once loaded), kept out of latency_s and usage.phases_s so
    # that a 20 ms query does not read as 5 s (backends/embedder/loading.py).
    embedder_load_s: float = 0.0
    warnings: list[QueryWarning] = field(default_factory=list)
    # The query's OpenTelemetry trace id (hex; "" with tracing off): ``trace`` above is
    # the method's decisions, this is where to find its spans.
    trace_id: str = ""

    def __post_init__(self) -> None:
        self.trace.update(self._trace_notes())

    def degrade(self, step: str, reason: str) -> None:
        self.degraded.append(Degradation(step=step, reason=reason))
        self.trace.update(self._trace_notes())

    def full_trace(self) -> dict[str, Any]:
        """The method's trace with the degradations (and a cut answer) in it, as they
        are now: one list, whichever way the result is shown."""
        return {**self.trace, **self._trace_notes()}

    def _trace_notes(self) -> dict[str, Any]:
        notes: dict[str, Any] = {"degraded": [d.as_dict() for d in self.degraded]}
        if self.answer_truncated:
            notes["answer_truncated"] = True
        if self.usage.replies:
            # Say when a reply was read leniently: a judge's 0-1 scores rescaled to
            # 0-10, say, changes what the ranking rests on.
            notes["llm_replies"] = dict(self.usage.replies)
        cited = {p.doc_id: p.citation.label() for p in self.passages if p.citation is not None}
        if cited:
            # What the trace's document ids are, for a person checking them: file, page
            # and section.
            notes["citations"] = cited
        return notes

    def as_dict(self) -> dict[str, Any]:
        return {
            "question": self.question, "method": self.method, "index": self.index,
            "answer": self.answer, "answer_truncated": self.answer_truncated,
            "degraded": [d.as_dict() for d in self.degraded],
            "passages": [passage_dict(p) for p in self.passages],
            "trace": self.full_trace(), "usage": self.usage.as_dict(),
            "latency_s": round(self.latency_s, 6),
            "embedder_load_s": round(self.embedder_load_s, 6),
            "warnings": [w.as_dict() for w in self.warnings],
            "trace_id": self.trace_id,
        }


def passage_dict(p: RankedPassage) -> dict[str, Any]:
    """A passage as results show it in JSON (HTTP, ``--json``, a stream's events)."""
    return {"rank": p.rank, "doc_id": p.doc_id, "title": p.title, "text": p.text,
            "score": p.score, "via": {"unit_id": p.via_unit_id, "kind": p.via_kind,
                                      "text": p.via_text},
            "citation": None if p.citation is None else p.citation.as_dict()}


LlmProvider = Callable[[], "LlmRunner | None"]


class QueryReranking(Protocol):
    """One query's reranker stage (``methods/retrieval/rerank.py``): how many of a
    retrieval's first candidates it reads, and their reordering against a query."""

    @property
    def top_n(self) -> int: ...

    def reorder(self, query: str, hits: Sequence[Hit], texts: Mapping[str, str], *,
                step: str) -> list[Hit]: ...


class AnswerListener(Protocol):
    """Told a streamed query's results as they come: its passages as soon as retrieval
    has them, then the answer's text piece by piece (``methods/llm_steps.py``). The
    pieces come from the LLM client's thread: a listener only hands them on.
    ``cancelled`` is set when nobody reads any more; the answer call then stops."""

    @property
    def cancelled(self) -> threading.Event: ...

    def put_passages(self, passages: Sequence[RankedPassage]) -> None: ...

    def put_delta(self, text: str) -> None: ...


@dataclass(frozen=True, slots=True)
class SearchContext:
    """The protocol objects a query method reads; never a concrete backend.

    The LLM comes as ``llm`` (already open) or ``open_llm`` (opened the first time a
    method asks, through ``require_llm``): a method that needs no LLM (``naive``,
    ``extractive``) never opens it, so no LLM setting can break it.
    """

    vectors: VectorStore
    keywords: KeywordIndex
    units: UnitStore
    documents: DocumentStore
    indexes: IndexCatalog
    embedder: Embedder
    llm: LlmRunner | None = None
    open_llm: LlmProvider | None = None
    # Read by methods with knobs of their own (bridgerag: judge timeout, decision records).
    settings: Settings | None = None
    # Query-time work sent to a worker queue (bridgerag's judge); None: run in-process.
    tasks: QueryTasks | None = None
    # A method's own settings by method name, and the unit kinds an index holds by
    # index name: both come from the method registry, which this module cannot import.
    read_settings: Callable[[str], Any] | None = None
    index_kinds: Callable[[str], frozenset[UnitKind]] | None = None
    # Index methods' own records (sirerag's tree plans), for methods that read them.
    records: RecordStore | None = None
    # The entity catalogue (who mentions what), for methods that walk it (hops).
    catalogue: EntityCatalogue | None = None
    # One query's own: who hears it stream (None: the answer comes whole), and the
    # reranker stage with its notes (None: the query is not reranked).
    listener: AnswerListener | None = None
    rerank: QueryReranking | None = None

    def method_settings(self, method: str) -> Any:
        if self.read_settings is None:
            raise ConfigError(f"no method settings in this search context (method {method!r})")
        return self.read_settings(method)

    def kinds_of(self, index: str) -> frozenset[UnitKind]:
        """The unit kinds ``index``'s method writes (empty: unknown, read everything)."""
        return self.index_kinds(index) if self.index_kinds is not None else frozenset()

    def require_llm(self, method: str) -> LlmRunner:
        llm = self.llm
        if llm is None and self.open_llm is not None:
            llm = self.open_llm()
        if llm is None:
            raise ConfigError(f"method {method!r} answers with an LLM and none is configured: "
                              "set HOPINDEX_LLM_MODEL (and HOPINDEX_LLM_BASE_URL, "
                              "OPENAI_API_KEY)")
        return llm

    def query_usage(self) -> UsageMeter:
        """The meter of one query's LLM calls, with the query's one deadline for all of
        them (HOPINDEX_QUERY_LLM_DEADLINE_S, backends/llm/query_policy.py) started now."""
        from hopindex.backends.llm.query_policy import QueryDeadline
        from hopindex.backends.llm.usage import UsageMeter

        settings = self.settings or Settings()
        return UsageMeter(deadline=QueryDeadline(
            total_s=settings.query_llm_deadline_s,
            call_timeout_s=settings.query_llm_call_timeout_s))

    def index_method(self, index: str) -> str:
        info = self.indexes.get_index(index)
        if info is None:
            raise NotFoundError(f"no index {index!r}")
        return info.method


class QueryTasks(Protocol):
    """Runs a query-time task on its worker queue and waits for its JSON result; raises
    ``BackendUnavailableError`` when no worker answers within ``timeout_s``."""

    def run_task(self, name: str, payload: dict[str, Any],
                 timeout_s: float) -> dict[str, Any]: ...


class QueryMethod(Protocol):
    name: str

    def run_query(self, index: str, question: str, options: QueryOptions) -> QueryResult: ...


def degraded_lines(trace: Mapping[str, Any]) -> list[str]:
    """``degraded at STEP: REASON`` for each degradation in a trace (``full_trace``), for
    the methods' ``describe_trace``."""
    return [f"degraded at {d.get('step', '-')}: {d.get('reason', '')}"
            if isinstance(d, Mapping) else f"degraded: {d}"
            for d in trace.get("degraded", [])]
