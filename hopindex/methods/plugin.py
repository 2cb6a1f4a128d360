"""What an index method is: its settings, the units it writes, and its phases.

An index method is pure work on documents and groups. It never touches Celery, an
engine's write path or a job record: the runtime (``hopindex/scheduler`` and
``hopindex/workers``) runs its phases as recorded fan-outs, writes the units a phase
returns, embeds them, purges the units they replace, records failed items and
re-plans them, and reports progress, LLM usage, events and metrics once for every
method. ``docs/methods.md`` walks through writing one.

A phase is one of three kinds:

- ``DOCUMENTS`` (stage1 queue): a batch of documents in, their units out. The
  runtime finds the units each document's run replaces (same document, a kind the
  phase writes, an id no longer produced) and purges them after embedding. A
  document whose run fails keeps its previous units and no content hash, so the
  next ingest runs it again.
- ``GROUPS`` (stage2 queue): group keys touched by earlier phases in (bridge
  entities), each group's units out, replacing that group's previous units in the
  group store. A key that fails keeps its previous units and is planned again by
  every later job until it succeeds.
- ``LEVELS`` (stage2 queue): work over the whole index, level by level (trees,
  global linking). The runtime asks ``plan_level`` for level 0's items, fans them
  out to ``build_level``, embeds what they wrote, asks for level 1, and so on until
  the planner returns nothing. Each item is a group of the phase's namespace. A
  phase whose result is global (a tree over every passage) can ask to be rebuilt
  only on request (``Rebuild.ON_REQUEST``): jobs that change documents then mark it
  stale, and a rebuild job (or enough changed documents) builds it again.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from hopindex.backends.protocols import KeywordIndex, NlpAnalyzer, StateStore, VectorStore
from hopindex.core.errors import ConfigError
from hopindex.core.models import Document, ItemError, Unit, UnitKind
from hopindex.core.plugin_settings import check_namespace
from hopindex.methods.base import QueryMethod, SearchContext
from hopindex.methods.operations import MethodOperation, check_operation

if TYPE_CHECKING:
    from hopindex.backends.llm.client import ChatRequest
    from hopindex.backends.llm.runner import LlmRunner
    from hopindex.backends.llm.usage import UsageMeter


class LlmUse(enum.StrEnum):
    """Whether a method calls an LLM: an index needing one refuses to start without it."""

    NONE = "none"
    REQUIRED = "required"


class Rebuild(enum.StrEnum):
    """When a levels phase runs: in every job, or only when asked (see ``LevelsPhase``)."""

    EVERY_JOB = "every_job"
    ON_REQUEST = "on_request"


class PhaseKind(enum.StrEnum):
    DOCUMENTS = "documents"
    GROUPS = "groups"
    LEVELS = "levels"


@dataclass(slots=True)
class Scope:
    """What a job changes, carried from phase to phase as JSON.

    ``doc_ids``: documents new or changed (an ingest) or not fully indexed (a
    repair); ``deleted``: documents a delete removed; ``touched``: group keys to
    rebuild, per namespace; ``notes``: lists a method keeps for its later phases
    (the extractive method's titles that name no document any more); ``rebuild``:
    the qualified names of ``Rebuild.ON_REQUEST`` levels phases this job builds
    again (a rebuild job names them all); ``hashes``: the content hash of each of
    ``doc_ids`` as the job read it, which its finalize step marks the document with
    only if the stored text still has it.
    """

    doc_ids: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    touched: dict[str, list[str]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)
    rebuild: list[str] = field(default_factory=list)
    hashes: dict[str, str] = field(default_factory=dict)

    def touch(self, touched: Mapping[str, Sequence[str] | set[str]]) -> None:
        for namespace, keys in touched.items():
            if keys:
                self.touched[namespace] = sorted(set(self.touched.get(namespace, ())) | set(keys))

    def as_dict(self) -> dict[str, Any]:
        return {"doc_ids": list(self.doc_ids), "deleted": list(self.deleted),
                "touched": {k: list(v) for k, v in sorted(self.touched.items())},
                "notes": {k: list(v) for k, v in sorted(self.notes.items())},
                "rebuild": list(self.rebuild), "hashes": dict(self.hashes)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scope:
        return cls(doc_ids=list(data.get("doc_ids", [])), deleted=list(data.get("deleted", [])),
                   touched={str(k): list(v) for k, v in data.get("touched", {}).items()},
                   notes={str(k): list(v) for k, v in data.get("notes", {}).items()},
                   rebuild=[str(name) for name in data.get("rebuild", [])],
                   hashes={str(k): str(v) for k, v in data.get("hashes", {}).items()})


LlmProvider = Callable[[], "LlmRunner | None"]
# A query-time task a worker runs for a query method: its LLM (None when the worker has
# none) and the task's JSON payload in, a JSON object out. It never raises for a failure
# the query can fall back from: it says so in its answer.
QueryTaskHandler = Callable[["LlmRunner | None", dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class PhaseContext:
    """What a phase function may use: the index's state (documents, units, mentions,
    groups and its own records), keyword search, the stored vectors of units already
    embedded (a tree clusters them), the NLP analyser and the LLM (both opened on first
    use), its method's settings, and the meter its LLM calls report to.

    The state store is for reading, for the entity catalogue and for the method's own
    records (``put_records``); units go back to the runtime as a phase's result. The
    vector store is for reading (``get_vectors``): the runtime writes vectors.
    """

    index: str
    method: str
    phase: str
    state: StateStore
    keywords: KeywordIndex
    settings: Any
    usage: UsageMeter
    open_nlp: Callable[[], NlpAnalyzer]
    open_llm: LlmProvider
    open_vectors: Callable[[], VectorStore]
    # The job the phase runs for ("" outside a job): what a phase may key a cache on
    # that holds while the job runs (an index has one writing job at a time).
    job_id: str = ""

    @property
    def nlp(self) -> NlpAnalyzer:
        return self.open_nlp()

    @property
    def vectors(self) -> VectorStore:
        return self.open_vectors()

    def require_llm(self) -> LlmRunner:
        llm = self.open_llm()
        if llm is None:
            raise ConfigError(f"index {self.index!r} is built with {self.method!r}, which needs "
                              "an LLM, and none is configured in this process: set "
                              "HOPINDEX_LLM_MODEL (and HOPINDEX_LLM_BASE_URL, OPENAI_API_KEY)")
        return llm


@dataclass(slots=True)
class DocumentsResult:
    """A documents phase's batch: the units written, the group keys touched per
    namespace, and the documents that failed for good (``ItemError.item`` is the id)."""

    units: list[Unit] = field(default_factory=list)
    touched: dict[str, set[str]] = field(default_factory=dict)
    errors: list[ItemError] = field(default_factory=list)

    def touch(self, namespace: str, keys: Iterable[str]) -> None:
        self.touched.setdefault(namespace, set()).update(keys)


@dataclass(slots=True)
class GroupsResult:
    """A groups or levels batch: each built key's units. A key asked for that is in
    neither ``built`` nor ``errors`` has no units now; its previous ones are purged."""

    built: dict[str, list[Unit]] = field(default_factory=dict)
    errors: list[ItemError] = field(default_factory=list)


RunDocuments = Callable[[PhaseContext, list[Document]], DocumentsResult]
SelectDocuments = Callable[[PhaseContext, Scope], list[str]]
BuildGroups = Callable[[PhaseContext, list[str]], GroupsResult]
PlanLevel = Callable[[PhaseContext, int, Scope], list[str]]
BuildLevel = Callable[[PhaseContext, int, list[str]], GroupsResult]


def job_documents(context: PhaseContext, scope: Scope) -> list[str]:
    """The default selection of a documents phase: the job's new or changed documents."""
    return list(scope.doc_ids)


@dataclass(frozen=True, slots=True)
class DocumentsPhase:
    name: str
    run: RunDocuments
    # Unit kinds this phase writes: a document's earlier units of these kinds that
    # its new run no longer produces are stale.
    writes: frozenset[UnitKind] = frozenset()
    select: SelectDocuments = job_documents
    # Documents per task, in multiples of HOPINDEX_STAGE1_BATCH_DOCS: a light phase
    # (no NLP, no LLM) takes bigger batches.
    batch_scale: int = 1
    kind: PhaseKind = PhaseKind.DOCUMENTS


@dataclass(frozen=True, slots=True)
class GroupsPhase:
    name: str
    namespace: str
    build: BuildGroups
    writes: frozenset[UnitKind] = frozenset()
    kind: PhaseKind = PhaseKind.GROUPS


@dataclass(frozen=True, slots=True)
class LevelsPhase:
    name: str
    namespace: str
    plan: PlanLevel
    build: BuildLevel
    writes: frozenset[UnitKind] = frozenset()
    # A planner that never returns an empty level would run forever: a bound.
    max_levels: int = 32
    # ON_REQUEST: built by the index's first job, by a rebuild job, and by a job after
    # which the share of documents changed since the last build reaches
    # ``rebuild_share(settings)`` (the method's settings; 0 or None: never
    # automatically); any other job only marks it stale on the index record.
    rebuild: Rebuild = Rebuild.EVERY_JOB
    rebuild_share: Callable[[Any], float] | None = None
    kind: PhaseKind = PhaseKind.LEVELS


Phase = DocumentsPhase | GroupsPhase | LevelsPhase


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What a method's ``forget_documents`` leaves for the phases of a delete."""

    touched: dict[str, set[str]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)


class IndexMethod(Protocol):
    """An index method: how documents become units. See the module docstring."""

    @property
    def name(self) -> str: ...
    @property
    def llm_use(self) -> LlmUse: ...
    @property
    def settings_type(self) -> type[Any]:
        """A frozen dataclass of the method's settings, read from
        ``HOPINDEX_<NAME>_<FIELD>`` variables (every field has a default)."""
        ...
    @property
    def writes(self) -> frozenset[UnitKind]: ...
    @property
    def default_queries(self) -> tuple[str, ...]:
        """Query methods this index answers best, the first being an index's default."""
        ...
    @property
    def phases(self) -> tuple[Phase, ...]: ...

    def forget_documents(self, context: PhaseContext, doc_ids: Sequence[str]) -> Forgotten:
        """Drop the method's own records of documents a delete removes (entity mentions,
        analyses) and say which groups they touched."""
        ...


@dataclass(frozen=True, slots=True)
class PlanContext:
    """What a dry run's planner may use: the index's state and the NLP analyser, for
    reading only, and the method's settings. No LLM, no writes: a plan costs nothing."""

    index: str
    method: str
    phase: str  # qualified: ``indexrag.stage1``
    state: StateStore
    settings: Any
    open_nlp: Callable[[], NlpAnalyzer]

    @property
    def nlp(self) -> NlpAnalyzer:
        return self.open_nlp()


@dataclass(frozen=True, slots=True)
class DocumentCalls:
    """One document's calls in a documents phase: ``requests`` exactly as they are sent
    (so the response cache key and the prompt size are known), and at most ``more``
    further calls built from their replies (0: the requests are all of them)."""

    requests: list[ChatRequest] = field(default_factory=list)
    more: int = 0


@dataclass(frozen=True, slots=True)
class CallBound:
    """At most ``max_calls`` LLM calls for a groups or levels phase, and how that bound
    was reached (``basis``, for a person); ``max_calls`` None: no bound can be given."""

    max_calls: int | None
    basis: str


@runtime_checkable
class CallPlanner(Protocol):
    """Optional on an index method: the LLM calls an ingest would make, without making
    them (``hopindex ingest --dry-run``). A method without it is "not planned".

    ``plan_document_calls``: the calls a documents phase (``context.phase``) makes for
    ``document`` (new or changed); None when that phase cannot say. Planning runs no
    model and writes nothing: it may read the state and run the NLP analyser.
    ``bound_group_calls``: an upper bound on a groups or levels phase's calls when
    ``documents`` (new or changed) are ingested; None: not planned.
    """

    def plan_document_calls(self, context: PlanContext, document: Document
                            ) -> DocumentCalls | None: ...

    def bound_group_calls(self, context: PlanContext, documents: Sequence[Document]
                          ) -> CallBound | None: ...


def phase_name(method: str, phase: Phase | str) -> str:
    """The qualified name a job record and the metrics use: ``indexrag.stage1``."""
    return f"{method}.{phase if isinstance(phase, str) else phase.name}"


def find_phase(method: IndexMethod, name: str) -> Phase:
    """The phase of ``method`` named ``name``, bare (``stage1``) or qualified."""
    name = name.removeprefix(f"{method.name}.")
    for phase in method.phases:
        if phase.name == name:
            return phase
    raise ConfigError(f"index method {method.name!r} has no phase {name!r}; its phases: "
                      f"{', '.join(p.name for p in method.phases)}")


QueryFactory = Callable[[SearchContext], QueryMethod]


@dataclass(frozen=True, slots=True)
class QueryMethodSpec:
    """A query method: how to make it, the unit kinds it reads, whether it calls an LLM.

    ``reads`` are the kinds the method ranks, any one of which an index must hold for
    the method to answer from it (``extractive`` ranks passages, and bridges when the
    index has them; ``bridgerag`` ranks passages or AKUs); empty means any index.
    ``settings_type``, when given, is a frozen dataclass read from
    ``HOPINDEX_<NAME>_<FIELD>`` like an index method's settings.
    ``options_schema``: the method's own query options (``QueryOptions.params``) as a
    JSON Schema object, which the HTTP API checks a query's ``options`` against and
    publishes (None: it takes none). ``describe_trace``: the method's trace as lines
    for a person (``hopindex query --trace``; None: shown as ``key: value`` lines).
    """

    name: str
    factory: QueryFactory
    reads: frozenset[UnitKind]
    llm_use: LlmUse
    summary: str
    settings_type: type[Any] | None = None
    options_schema: Mapping[str, Any] | None = None
    describe_trace: Callable[[dict[str, Any]], list[str]] | None = None
    # Why each passage ranks, from the method's trace, by document id: one short phrase
    # a model reads beside the passage (the MCP server's ``search``). None, or a passage
    # left out: the unit that led to the passage says it alone.
    explain_passages: Callable[[dict[str, Any]], Mapping[str, str]] | None = None
    # Query-time work a query may send to a worker queue (bridgerag's judge), by name:
    # the worker runs ``handler(llm, payload)``; the query sends ``<method>.<name>``
    # through ``SearchContext.tasks``.
    tasks: Mapping[str, QueryTaskHandler] = field(default_factory=dict)
    # What `hopindex eval --method <name>` compares, by variant name (``--method
    # <name>:<variant>`` picks one): each variant's query parameters.
    eval_variants: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


class MethodRegistry:
    """Index methods and query methods by name."""

    def __init__(self) -> None:
        self.index_methods: dict[str, IndexMethod] = {}
        self.query_methods: dict[str, QueryMethodSpec] = {}
        self.operations: dict[tuple[str, str], MethodOperation] = {}

    def add_index_method(self, method: IndexMethod) -> None:
        check_namespace(method.name, "index method")
        if method.name in self.index_methods:
            raise ConfigError(f"index method {method.name!r} is registered twice")
        names = [p.name for p in method.phases]
        if not names or len(set(names)) != len(names):
            raise ConfigError(f"index method {method.name!r} must have phases with distinct "
                              f"names, got {names}")
        self.index_methods[method.name] = method

    def add_query_method(self, spec: QueryMethodSpec) -> None:
        check_namespace(spec.name, "query method")
        if spec.name in self.query_methods:
            raise ConfigError(f"query method {spec.name!r} is registered twice")
        self.query_methods[spec.name] = spec

    def add_operation(self, operation: MethodOperation) -> None:
        check_operation(operation)
        key = (operation.method, operation.name)
        if key in self.operations:
            raise ConfigError(f"operation {operation.name!r} of method {operation.method!r} is "
                              "registered twice")
        self.operations[key] = operation

