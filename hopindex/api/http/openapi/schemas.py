"""The OpenAPI components: request and response bodies, as JSON Schema (2020-12).

Request bodies and the results the client reads are pydantic models
(api/client/requests.py, api/client/models.py): their components are the models'
own schemas (``model_schemas``), so a request schema is exactly as strict as the
validation the handlers run. The runtime records (Job, Event, QueryResult) are
written by their own ``as_dict``; their wire forms are models too (api/client/wire.py),
which the remote client reads them with. What stays written here is what no model
holds: the error shape, the items of fields a model leaves open (a level build, a
failed item, a job's dry-run estimate), and what depends on the settings or the
registry (the longest question, the methods a server can build, the steps a job counts).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode
from pydantic_core import CoreSchema, core_schema

from hopindex.api.access import Access
from hopindex.api.client.models import (
    DocumentView,
    IndexBudget,
    IndexDescription,
    IndexLlmMode,
    IndexSummary,
    IngestPlanView,
    OperationInfo,
    TransferCounts,
    WebhookInfo,
)
from hopindex.api.client.query_stream import AnswerDeltaView, PassagesEventView, QueryEventType
from hopindex.api.client.requests import (
    NOT_BLANK,
    BudgetRequest,
    CreateIndex,
    DeleteDocuments,
    LlmModeRequest,
    NewWebhook,
    QueryRequest,
    RejectLink,
)
from hopindex.api.client.wire import EventView, JobView, QueryResultView, QueryUsageView
from hopindex.api.http.event_tokens import EVENT_TOKEN_TTL_S, TOKEN_PARAM, TOKEN_PATTERN
from hopindex.api.http.sse import StreamMode
from hopindex.api.http.uploads import OnError
from hopindex.api.method_options import option_schemas
from hopindex.api.query_platform import PLATFORM_OPTIONS
from hopindex.core.ids import INDEX_NAME_PATTERN
from hopindex.core.models import Stage, UnitKind
from hopindex.core.settings import Settings
from hopindex.methods.plugin import LlmUse, PhaseKind, phase_name
from hopindex.methods.registry import (
    default_index_method,
    get_index_method,
    index_method_names,
)
from hopindex.scheduler.dry_run_plan import Planning
from hopindex.scheduler.dry_run_tokens import TokenBasis
from hopindex.scheduler.level_builds import BuildState

Schema = dict[str, Any]

INDEX_NAME: Schema = {"type": "string", "pattern": INDEX_NAME_PATTERN.pattern}
NUMBER: Schema = {"type": "number"}
TIMESTAMP: Schema = {"type": "number", "description": "seconds since the epoch (UTC)"}
OPTIONAL_TIMESTAMP: Schema = {"type": ["number", "null"]}


REF_TEMPLATE = "#/components/schemas/{model}"


def ref(name: str) -> Schema:
    return {"$ref": REF_TEMPLATE.format(model=name)}


class _Generator(GenerateJsonSchema):
    """Field titles left out (the property names say it all). An answer carries every
    field of its model, defaults too (``as_dict``), so there a field is required
    unless it is left out when None (a webhook's secret)."""

    def field_title_should_be_set(self, schema: CoreSchema) -> bool:
        return False

    def normalize_name(self, name: str) -> str:
        # A wire model (api/client/wire.py) is its component's name plus View.
        return super().normalize_name(name).removesuffix("View")

    def field_is_required(self, field: core_schema.ModelField | core_schema.DataclassField
                          | core_schema.TypedDictField, total: bool) -> bool:
        inner: Any = field["schema"]
        if self.mode != "serialization" or inner["type"] != "default":
            return super().field_is_required(field, total)
        return "default_factory" in inner or inner.get("default") is not None


def model_schemas(models: dict[str, type[BaseModel]],
                  mode: JsonSchemaMode = "serialization") -> dict[str, Schema]:
    """Components for pydantic models, each under the name the document has always
    given it, the models and enums it refers to hoisted from ``$defs`` beside it.
    Results (api/client/models.py) as the server sends them (``serialization``, by
    alias): the document then says of an answer what the client reads; request bodies
    (api/client/requests.py) as the handlers check them (``validation``)."""
    found: dict[str, Schema] = {}
    for name, model in models.items():
        schema = model.model_json_schema(by_alias=True, mode=mode, ref_template=REF_TEMPLATE,
                                         schema_generator=_Generator)
        found.update(schema.pop("$defs", {}))
        found[name] = schema
    return {name: _compact(schema) for name, schema in found.items()}


def _compact(node: Any) -> Any:
    """``anyOf: [X, null]`` of a plain X as X with null among its types (and its enum),
    as the document wrote an optional field before its schemas were generated."""
    if isinstance(node, list):
        return [_compact(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _compact(value) for key, value in node.items()}
    options = node.get("anyOf", [])
    if len(options) == 2 and options[1] == {"type": "null"} and "type" in options[0]:
        del node["anyOf"]
        node = {**options[0], **node}
        node["type"] = [node["type"], "null"]
        if "enum" in node:
            node["enum"] = [*node["enum"], None]
    return node


def graft(schema: Schema, **properties: Schema) -> Schema:
    """``schema`` with what these properties are said to be added to what the model
    says of them (the items of a list a model leaves open, say)."""
    for name, extra in properties.items():
        # A reference stands for the whole value: it replaces what the model says.
        schema["properties"][name] = extra if "$ref" in extra else {
            **schema["properties"][name], **extra}
    return schema


def enum_of(kind: Any) -> Schema:
    return {"type": "string", "enum": [m.value for m in kind]}


def obj(properties: dict[str, Schema], required: tuple[str, ...] = (), *,
        closed: bool = False) -> Schema:
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return schema


ERROR = obj({"error": obj({
    "code": {"type": "string", "description": "stable, for programs"},
    "message": {"type": "string", "description": "for people"},
    "field": {"type": "string", "description": "the parameter or body field at fault"},
    "line": {"type": "integer", "description": "the body line at fault"},
    "record": {"type": "integer", "description": "the record's position in a JSON array"},
    "file": {"type": "string", "description": "the body file at fault (body.jsonl, an upload)"},
    "errors": {"type": "array", "items": {"type": "object"},
               "description": "every bad record (up to 100), each with where/line/field"},
    "error_count": {"type": "integer"},
    "request_id": {"type": "string", "description": "quote it when reporting a 5xx"},
    "after_id": {"type": "string", "description": "events_gone: the event id asked for"},
    "oldest_id": {"type": ["string", "null"],
                  "description": "events_gone: the oldest event id the log keeps"},
    "retention": {"type": "integer",
                  "description": "events_gone: events the log keeps (HOPINDEX_EVENT_RETENTION)"},
}, ("code", "message"))}, ("error",))

FAILED_ITEM = obj({"phase": {"type": "string"}, "item": {"type": "string"},
                   "reason": {"type": "string"}, "job_id": {"type": "string"},
                   "failed_at": TIMESTAMP}, ("phase", "item", "reason", "job_id", "failed_at"))

OPTIONAL_STRING: Schema = {"type": ["string", "null"]}
SHARE: Schema = {"type": "number", "minimum": 0}

LEVEL_BUILD = obj({
    "phase": {"type": "string", "description": "the levels phase, <method>.<phase>"},
    "state": {"type": "string", "enum": [s.value for s in BuildState],
              "description": "never_built; current; stale: documents changed since the "
                             "build; building: a job builds it now; interrupted: the job "
                             "building it ended first (the next job or a repair builds it)"},
    "stale": {"type": "boolean", "description": "whether it may not reflect the documents "
                                                "as they are now (any state but current)"},
    "built_at": {**OPTIONAL_TIMESTAMP, "description": "the last finished build; null: never"},
    "built_by": {**OPTIONAL_STRING, "description": "the job of that build"},
    "documents_at_build": {"type": "integer", "minimum": 0},
    "changed_since_build": {"type": "integer", "minimum": 0,
                            "description": "documents added, changed or deleted since"},
    "changed_share": {**SHARE, "description": "changed_since_build of the documents now"},
    "rebuild_share": {**SHARE, "description": "the changed share at which a job rebuilds "
                                              "it automatically; 0: on request only"},
    "building_job": {**OPTIONAL_STRING, "description": "the job building it now (or that "
                                                       "ended before it finished)"},
}, ("phase", "state", "stale", "built_at", "built_by", "documents_at_build",
    "changed_since_build", "changed_share", "rebuild_share", "building_job"))

def index_methods(settings: Settings) -> Schema:
    """How this server can build an index: a method that needs an LLM only with one
    configured (scheduler.submit.ensure_index refuses it otherwise)."""
    return {"type": "string", "enum": [
        name for name in index_method_names()
        if settings.llm_enabled or get_index_method(name).llm_use is LlmUse.NONE],
        "description": "the index method (default here: "
                       f"{default_index_method(settings.llm_enabled)})"}


def step_names() -> list[str]:
    """What a job counts: its own steps and every phase of every index method, by the
    qualified name (``<method>.<phase>``)."""
    phases = [phase_name(name, phase) for name in index_method_names()
              for phase in get_index_method(name).phases]
    return [Stage.VALIDATE.value, *phases, Stage.EMBED.value, Stage.FINALIZE.value]


# An ingest job's dry-run plan, made when it was submitted (scheduler/dry_run_plan.py),
# per phase by qualified name, beside which ``llm.stages`` shows what the calls used.
_OPTIONAL_COUNT: Schema = {"type": ["integer", "null"], "minimum": 0}
JOB_ESTIMATE: Schema = {
    "type": "object", "additionalProperties": obj({
        "kind": enum_of(PhaseKind),
        "planning": {**enum_of(Planning), "description": "how calls is known: exact, "
                                                         "bound (at most), not_planned"},
        "calls": _OPTIONAL_COUNT, "basis": {"type": "string"},
        "cache_hits": {"type": "integer", "minimum": 0},
        "prompt_chars": _OPTIONAL_COUNT, "input_chars": _OPTIONAL_COUNT,
        "prompt_tokens": _OPTIONAL_COUNT, "completion_tokens": _OPTIONAL_COUNT,
        "token_basis": {**enum_of(TokenBasis), "description": "history (per character), "
                                                              "history_per_call, or "
                                                              "characters (a fixed ratio)"},
        "cost": {"type": ["number", "null"], "minimum": 0,
                 "description": "at the prices set when planned; null: unpriced"},
        "model": {"type": "string"}}),
    "description": "the ingest's dry-run plan per phase, made when it was submitted; "
                   "empty for a method without an LLM or when planning failed"}


# A reader record (README "Using it"): keys other than these are kept as metadata; an
# id, title or metadata given as null is left out (corpora often write their gaps so).
_DOC_ID: Schema = {"anyOf": [{"type": "string", "pattern": NOT_BLANK},
                             {"type": "integer"}, {"type": "null"}]}
DOCUMENT = obj({"id": _DOC_ID, "title": {"type": ["string", "null"]},
                "text": {"type": "string", "pattern": NOT_BLANK},
                "metadata": {"type": ["object", "null"]}}, ("text",))

# One frame of the event stream (OpenAPI 3.1 reads a text/event-stream schema per
# event): ``data`` holds an Event as JSON, or an Error on the ``error`` event that
# ends a stream the server could not go on with, or on the ``gap`` event that ends a
# stream fallen behind the log's retention (events_gone, with ``oldest_id``).
SERVER_SENT_EVENT = obj({
    "id": {"type": "string"}, "event": {"type": "string"}, "retry": {"type": "integer"},
    "data": {"type": "string", "contentMediaType": "application/json",
             "contentSchema": {"anyOf": [ref("Event"), ref("Error")]}},
})

# One frame of a streamed query (``"stream": true``): the event's type and its data as
# JSON; no id (a query is not resumed).
QUERY_SERVER_SENT_EVENT = obj({
    "event": {"type": "string", "enum": [*(t.value for t in QueryEventType), "error"],
              "description": "passages first; answer.delta pieces of the answer; usage; then "
                             "done, or degraded when a step degraded (both: the whole "
                             "result, whose answer stands); error ends a query that failed "
                             "after its first event"},
    "data": {"type": "string", "contentMediaType": "application/json",
             "contentSchema": {"anyOf": [ref("QueryPassages"), ref("AnswerDelta"),
                                         ref("QueryUsage"), ref("QueryResult"), ref("Error")]}},
}, ("event", "data"))

EVENT_TOKEN = obj({
    "token": {"type": "string", "pattern": TOKEN_PATTERN,
              "description": "pass as ?token= on GET /v1/events with index set to this index"},
    "index": INDEX_NAME,
    "expires_at": {"type": "integer", "description": "Unix time (s); a stream opened before "
                   "then keeps going, a later (re)connection is a 401"},
}, ("token", "index", "expires_at"))

READINESS = obj({"status": {"type": "string", "enum": ["ready", "unavailable"]},
                 "checks": {"type": "object", "additionalProperties": {"type": "string"}}},
                ("status", "checks"))


def or_null(schema: Schema) -> Schema:
    """``schema``, or JSON null: an optional field sent as null means its default."""
    nullable = dict(schema)
    if "anyOf" in schema:
        nullable["anyOf"] = [*schema["anyOf"], {"type": "null"}]
        return nullable
    kind = schema["type"]
    nullable["type"] = [*kind, "null"] if isinstance(kind, list) else [kind, "null"]
    if "enum" in schema:
        nullable["enum"] = [*schema["enum"], None]
    return nullable


def query_request(settings: Settings) -> dict[str, Schema]:
    """The QueryRequest model's components, with what the settings and the registry
    say: the longest question, each method's own options, the rules across fields."""
    found = model_schemas({"QueryRequest": QueryRequest}, "validation")
    schema = found["QueryRequest"]
    schema["properties"]["question"]["maxLength"] = settings.api_max_query_chars
    schemas = option_schemas(settings)
    schema["properties"]["options"] = or_null(_options(schemas))
    # One engine may be silenced, not both.
    schema["not"] = {"required": ["dense_weight", "keyword_weight"],
                     "properties": {"dense_weight": {"const": 0}, "keyword_weight": {"const": 0}}}
    if schemas:
        # Options belong to a query method that takes them, named explicitly: an index's
        # default query method may take none.
        # (Options of its own: the platform's, rerank, are any method's.)
        schema["if"] = {"required": ["options"], "properties": {"options": {
            "type": "object", "not": {"propertyNames": {"enum": list(PLATFORM_OPTIONS)}}}}}
        schema["then"] = {"required": ["method"],
                          "properties": {"method": {"enum": sorted(schemas)}}}
        # Each method's options are its own schema's, not any method's.
        schema["allOf"] = [{"if": {"required": ["method"],
                                   "properties": {"method": {"const": method}}},
                            "then": {"properties": {"options": or_null(options)}}}
                           for method, options in sorted(schemas.items())]
    return found


def _options(schemas: dict[str, Schema]) -> Schema:
    """The ``options`` field: one of the methods' option schemas (none when no method
    takes options)."""
    if not schemas:
        return {"type": "object", "maxProperties": 0,
                "description": "the method's own options: no installed method takes any"}
    listed = "; ".join(f"{method}: {', '.join(schema.get('properties', {}))}"
                       for method, schema in schemas.items())
    return {"anyOf": list(schemas.values()),
            "description": f"the method's own options (QueryOptions.params): {listed}; "
                           "other methods take none, and an option the method does not "
                           "take is a 400 naming options.NAME"}


def model_components(settings: Settings) -> dict[str, Schema]:
    """The components the models give: request bodies as the handlers validate them,
    results as the client reads them, with what a model leaves open said here."""
    found = {
        **model_schemas({"BudgetLimits": BudgetRequest, "DeleteDocuments": DeleteDocuments,
                         "NewWebhook": NewWebhook, "RejectLink": RejectLink,
                         "CreateIndex": CreateIndex, "LlmModeRequest": LlmModeRequest},
                        "validation"),
        **query_request(settings),
        **model_schemas({"Index": IndexSummary, "IndexDetail": IndexDescription,
                         "IndexBudget": IndexBudget, "IndexLlmMode": IndexLlmMode,
                         "Webhook": WebhookInfo,
                         "IngestPlan": IngestPlanView, "TransferCounts": TransferCounts,
                         "OperationInfo": OperationInfo,
                         # "Document" is the record an ingest body holds.
                         "StoredDocument": DocumentView}),
        **model_schemas({"Job": JobView, "Event": EventView,
                         "QueryResult": QueryResultView, "QueryPassages": PassagesEventView,
                         "AnswerDelta": AnswerDeltaView, "QueryUsage": QueryUsageView}),
    }
    # Which methods need an LLM is the server's to say: it offers those only with one.
    graft(found["CreateIndex"], method=or_null(index_methods(settings)))
    graft(found["Index"], name=INDEX_NAME)
    graft(found["IndexDetail"], name=INDEX_NAME,
          units={"description": "units per kind (" + ", ".join(UnitKind) + ")"},
          levels={"items": ref("LevelBuild")})
    graft(found["OutstandingWork"], items={"items": ref("FailedItem")})
    for name in ("Job", "Event", "QueryResult", "StoredDocument"):
        graft(found[name], index=INDEX_NAME)
    # The steps a job counts are the registry's (its installed methods' phases): listed
    # beside the model's open mapping, which a method added later fills the same way.
    graft(found["Job"], counts={"properties": {step: ref("StageCounts")
                                               for step in step_names()}},
          estimate=JOB_ESTIMATE)
    found.update(LevelBuild=LEVEL_BUILD, FailedItem=FAILED_ITEM)
    return found


def components(settings: Settings) -> dict[str, Any]:
    return {
        "securitySchemes": {
            "bearerAuth": {
                "type": "http", "scheme": "bearer",
                "description": f"an API key; {Access.READ.value} keys may query and read, "
                               f"{Access.WRITE.value} keys may also ingest, delete and cancel"},
            "eventToken": {
                "type": "apiKey", "in": "query", "name": TOKEN_PARAM,
                "description": "for a page's EventSource, which cannot send a header: a "
                               "read-only token for one index's events from POST "
                               "/v1/indexes/{name}/events/token, valid for "
                               f"{EVENT_TOKEN_TTL_S // 60} minutes; never an API key"}},
        "schemas": {
            **model_components(settings),
            "Error": ERROR, "Document": DOCUMENT,
            # A frame of the stream, not a record: its data is an Event as JSON text.
            "ServerSentEvent": SERVER_SENT_EVENT, "EventToken": EVENT_TOKEN,
            "QueryServerSentEvent": QUERY_SERVER_SENT_EVENT,
            "Readiness": READINESS,
            "OnError": enum_of(OnError), "StreamMode": enum_of(StreamMode),
        },
    }
