"""The OpenAPI 3.1 document served at ``/v1/openapi.json``: one entry per route.

Built from the settings, so the limits it publishes are the server's own; tests
check that it lists exactly the app's routes and that answers match it.
"""

from __future__ import annotations

from typing import Any

from hopindex.api.client.requests import NOT_BLANK
from hopindex.api.http.openapi.budget import BUDGET_SCHEMAS, COST, JOB_FIELDS, TOKENS
from hopindex.api.http.openapi.links import LINK_SCHEMAS
from hopindex.api.http.openapi.plan import INGEST_PLAN_FIELDS, PLAN_SCHEMAS
from hopindex.api.http.openapi.schemas import components, graft, index_methods, ref
from hopindex.api.http.params import MAX_BODY_STRING_CHARS
from hopindex.api.http.protocol import MAX_HEADER_BYTES, MAX_REQUEST_LINE_BYTES
from hopindex.api.http.routes.docs import (
    BUNDLE_PATH,
    DOCS_FROM_SLASH,
    DOCS_PATH,
    DOCS_SLASH_PATH,
    HTML_TYPE,
    SCRIPT_TYPE,
)
from hopindex.api.http.routes.events import EVENT_ID_PATTERN
from hopindex.api.http.routes.export import EXPORT_TYPE, IMPORT_PATH
from hopindex.api.http.routes.jobs import DEFAULT_LIST, JOB_ID_PATTERN, MAX_LIST
from hopindex.api.http.routes.operations import (
    OPERATION_NAME_PATTERN,
    OPERATIONS_PATH,
    RUN_PATH,
)
from hopindex.api.http.sse import EVENT_STREAM_TYPE
from hopindex.api.http.uploads import FILE_FIELD, NDJSON_TYPES
from hopindex.core.budget import MAX_COST, MAX_LLM_TOKENS
from hopindex.core.ids import INDEX_NAME_PATTERN
from hopindex.core.json_input import MAX_JSON_DEPTH, MAX_JSON_NUMBER_CHARS
from hopindex.core.llm_modes import LLM_MODE
from hopindex.core.settings import MetricsAccess, Settings
from hopindex.core.text import MAX_METADATA_DEPTH
from hopindex.methods.registry import default_index_method, index_method_names, list_operations

Operation = dict[str, Any]

_DESCRIPTIONS = {
    400: "invalid input; `field` or `line` names it", 401: "no API key, or a wrong one",
    403: "the key's access or indexes do not cover this request", 404: "not found",
    409: "conflicts with the current state",
    410: "the events after this id were trimmed (HOPINDEX_EVENT_RETENTION); `oldest_id` "
         "is the oldest kept: read from the start (no id) for what is left",
    413: "over a size or count limit",
    415: "unsupported media type", 422: "needs something this server is not set up for",
    429: "busy, or too many requests without a valid key from this address: retry after "
         "`Retry-After` seconds", 500: "unexpected; quote `request_id`",
    502: "the LLM provider failed", 503: "a backend is unavailable; retry later",
    504: "took longer than the request timeout",
}
_SERVER = (500, 502, 503, 504)
# What the bounded JSON parser refuses (hopindex.core.json_input), with a 400 naming
# the field, or in an ingest body the record's line and field.
_JSON_LIMITS = (f"JSON is read within limits: nesting of at most {MAX_JSON_DEPTH} levels "
                f"({MAX_METADATA_DEPTH} in a document), numbers of at most "
                f"{MAX_JSON_NUMBER_CHARS} characters and within a 64-bit float's range (no "
                "NaN or Infinity), no unpaired surrogates (\\ud800), strings of at most "
                f"{MAX_BODY_STRING_CHARS:,} characters (a question: "
                "HOPINDEX_API_MAX_QUERY_CHARS; in a document: HOPINDEX_MAX_DOCUMENT_BYTES); "
                "past one, a 400 names the field.")


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _errors(*statuses: int, secured: bool = True) -> dict[str, Any]:
    # A secured route may answer 429 to a client that keeps failing authentication.
    codes = {400, *statuses, *_SERVER} | ({401, 403, 429} if secured else set())
    return {str(code): {"description": _DESCRIPTIONS[code], "content": _json(ref("Error"))}
            for code in sorted(codes)}


def _ok(status: int, description: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": description}
    if schema is not None:
        answer["content"] = _json(schema)
    return {str(status): answer}


def _op(summary: str, responses: dict[str, Any], *, params: list[dict[str, Any]] | None = None,
        body: dict[str, Any] | None = None, public: bool = False,
        tag: str = "indexes") -> Operation:
    op: Operation = {"summary": summary, "operationId": _operation_id(summary), "tags": [tag],
                     "responses": responses}
    if params:
        op["parameters"] = params
    if body is not None:
        op["requestBody"] = {"required": True, "content": body}
    if public:
        op["security"] = []
    return op


_ARTICLES = frozenset(("a", "an", "the", "this"))


def _operation_id(summary: str) -> str:
    """``Create an index`` -> ``createIndex``."""
    words = [w for w in summary.lower().split() if w not in _ARTICLES]
    return words[0] + "".join(w.capitalize() for w in words[1:])


def _param(name: str, where: str, schema: dict[str, Any], description: str,
           required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": where, "required": required or where == "path",
            "schema": schema, "description": description}


INDEX_PARAM = _param("name", "path", {"type": "string", "pattern": INDEX_NAME_PATTERN.pattern},
                     "index name: 1-63 of a-z, 0-9, '_', '-'")
EVENT_ID = {"type": "string", "pattern": EVENT_ID_PATTERN}
JOB_PARAM = _param("job_id", "path", {"type": "string", "pattern": JOB_ID_PATTERN}, "job id")
_NO_LINKS = ("only a kgbridge index keeps SAME_AS links: an index of another method is a "
             "400 on field method naming it")
LINK_PARAM = _param("link_id", "path", {"type": "string"},
                    "link id, as GET /v1/indexes/{name}/links lists it")
# A job's LLM mode on the routes that start one: the index's default replaced.
_LLM_MODE_PARAM = _param(LLM_MODE, "query", ref("LlmMode"),
                         "how the job's LLM calls are made: sync, one request at a time, or "
                         "batch, through the provider's Batch API (about half the price, "
                         "results within its completion window); default: the index's "
                         "default mode (PUT /v1/indexes/{name}/llm-mode), else the "
                         "server's HOPINDEX_LLM_MODE. Another value is a 400 on field "
                         "llm_mode")
INDEX_FILTER = _param("index", "query", {"type": "string",
                                         "pattern": INDEX_NAME_PATTERN.pattern},
                      "only this index's items (required for keys limited to some indexes)")


def _index_paths(settings: Settings) -> dict[str, Any]:
    documents_body = {
        "application/json": {"schema": {"anyOf": [
            {"type": "array", "items": ref("Document"), "minItems": 1,
             "maxItems": settings.api_max_documents},
            ref("Document"),
            {"type": "object", "minProperties": 1, "description": "HotpotQA corpus: title -> "
             "sentences", "additionalProperties": {
                 "type": "array", "minItems": 1,
                 "items": {"type": "string", "pattern": NOT_BLANK}}},
        ]}},
        **{media: {"schema": {"type": "string", "description": "one Document per line"}}
           for media in NDJSON_TYPES[:1]},
        "multipart/form-data": {"schema": {
            "type": "object", "required": [FILE_FIELD], "additionalProperties": False,
            "properties": {FILE_FIELD: {"type": "array", "items": {
                "type": "string", "contentMediaType": "application/octet-stream"}}}}},
    }
    return {
        "/v1/indexes": {
            "get": _op("List indexes", {**_ok(200, "indexes the key covers", {
                "type": "object", "required": ["indexes"],
                "properties": {"indexes": {"type": "array", "items": ref("Index")}}}),
                **_errors()}),
            "post": _op("Create an index", {
                **_ok(201, "created", ref("IndexDetail")),
                **_errors(409, 413, 415, 422)}, body=_json(ref("CreateIndex"))),
        },
        "/v1/indexes/{name}": {
            "parameters": [INDEX_PARAM],
            "get": _op("Describe an index", {**_ok(200, "the index", ref("IndexDetail")),
                                             **_errors(404)}, params=[
                _param("verify", "query", {"type": "string", "enum": ["true", "false"]},
                       "true: also read every document for stored text its units were not "
                       "built from (outstanding.changed_text); slower, what `repair "
                       "--check` asks")]),
            "delete": _op("Delete an index", {**_ok(204, "deleted with all it holds", None),
                                              **_errors(404, 409)}),
        },
        "/v1/indexes/{name}/documents": {
            "parameters": [INDEX_PARAM],
            "post": _op("Ingest documents", {
                **_ok(202, "the job (poll /v1/jobs/{id} or follow /v1/events)", ref("Job")),
                **_ok(200, "with dry_run=true: the plan; nothing was written and no LLM "
                           "was called", ref("IngestPlan")),
                **_errors(404, 413, 415, 422, 429)}, body=documents_body, params=[
                _param("method", "query", index_methods(settings),
                       "how a new index is built (default here: "
                       f"{default_index_method(settings.llm_enabled)}); an existing index "
                       "keeps its method"),
                _param("on_error", "query", ref("OnError"),
                       "reject (default): any bad record fails the request with a 400 naming "
                       "its line; skip: bad records are listed on the job"),
                _param("dry_run", "query", {"type": "string", "enum": ["true", "false"]},
                       "true: plan the ingest instead of running it (200 with the "
                       "IngestPlan: documents new, changed, unchanged and invalid, each "
                       "phase's LLM calls, exact or bounded, and tokens); nothing is "
                       "written and no LLM is called, so a read key may ask for it"),
                _param("split_by", "query",
                       {"type": "string", "enum": ["section", "file", "page"]},
                       "how PDF, HTML, DOCX and Markdown files become documents: section "
                       "(default: one per top-level section, id path#section-slug), file, "
                       "or page (PDF; other formats are one document)"),
                _param(MAX_LLM_TOKENS, "query", TOKENS,
                       "the job pauses before an LLM call would take its tokens past this "
                       "(POST /v1/jobs/{job_id}/resume continues it); replaces that limit "
                       "of the index's default budget"),
                _param(MAX_COST, "query", COST,
                       "the job pauses before an LLM call would take its cost past this; "
                       "replaces that limit of the index's default budget"),
                _LLM_MODE_PARAM]),
            "get": {**_op("Get a document", {
                **_ok(200, "the document as stored, with the metadata it was given and its "
                           "citation", ref("StoredDocument")),
                **_errors(404)}, params=[_param(
                    "id", "query", {"type": "string", "pattern": NOT_BLANK},
                    "the document's id, URL-encoded (ids may hold '/', '#' and spaces)",
                    required=True)]),
                "description": "One document of the index by id: a 400 on field id when it "
                               "is missing or blank, a 404 on field id when no document of "
                               "the index has it (a 404 without a field: no such index)"},
            "delete": _op("Delete documents", {
                **_ok(202, "the job", ref("Job")), **_errors(404, 413, 415, 429)},
                body=_json(ref("DeleteDocuments"))),
        },
        "/v1/indexes/{name}/repair": {
            "parameters": [INDEX_PARAM],
            "post": _op("Repair an index", {
                **_ok(202, "the job redoing the index's outstanding work", ref("Job")),
                **_errors(404, 409, 422, 429)}, params=[_LLM_MODE_PARAM]),
        },
        "/v1/indexes/{name}/rebuild": {
            "parameters": [INDEX_PARAM],
            "post": _op("Rebuild an index", {
                **_ok(202, "the job building the index's levels phases built on request "
                           "(its trees) again over its documents as they are now",
                      ref("Job")),
                **_errors(404, 409, 422, 429)}, params=[_LLM_MODE_PARAM]),
        },
        "/v1/indexes/{name}/budget": {
            "parameters": [INDEX_PARAM],
            "get": _op("Get the index budget", {
                **_ok(200, "the index's default budget", ref("IndexBudget")),
                **_errors(404)}),
            "put": _op("Set the index budget", {
                **_ok(200, "the default budget, replaced: a limit left out or null is "
                           "removed", ref("IndexBudget")),
                **_errors(404, 413, 415, 422)}, body=_json(ref("BudgetLimits"))),
            "delete": _op("Clear the index budget", {
                **_ok(204, "removed: later jobs have no budget unless they give one", None),
                **_errors(404)}),
        },
        "/v1/indexes/{name}/llm-mode": {
            "parameters": [INDEX_PARAM],
            "get": _op("Get the index LLM mode", {
                **_ok(200, "the index's default LLM mode", ref("IndexLlmMode")),
                **_errors(404)}),
            "put": _op("Set the index LLM mode", {
                **_ok(200, "the default LLM mode, replaced: null or left out removes it",
                      ref("IndexLlmMode")),
                **_errors(404, 413, 415)}, body=_json(ref("LlmModeRequest"))),
            "delete": _op("Clear the index LLM mode", {
                **_ok(204, "removed: later jobs that name no mode run in the server's "
                           "HOPINDEX_LLM_MODE", None),
                **_errors(404)}),
        },
        "/v1/indexes/{name}/links": {
            "parameters": [INDEX_PARAM],
            "get": {**_op("List links", {
                **_ok(200, "the SAME_AS links of a kgbridge index, by entity then link id", {
                    "type": "object", "required": ["links"],
                    "properties": {"links": {"type": "array", "items": ref("Link")}}}),
                **_errors(404)}, params=[_param(
                    "entity", "query", {"type": "string", "pattern": NOT_BLANK},
                    "only this entity name's links (case and spacing do not matter)")]),
                "description": _NO_LINKS},
        },
        "/v1/indexes/{name}/links/{link_id}/reject": {
            "parameters": [INDEX_PARAM, LINK_PARAM],
            "post": {**_op("Reject a link", {
                **_ok(200, "the link, rejected for good: later jobs never link or "
                           "adjudicate the pair again; rejecting it twice keeps the first "
                           "rejection", ref("RejectedLink")),
                **_errors(404, 413, 415)}, body=_json(ref("RejectLink"))),
                "description": _NO_LINKS + "; an unknown link id is a 404"},
        },
        "/v1/indexes/{name}/query": {
            "parameters": [INDEX_PARAM],
            "post": _op("Query an index", {
                "200": {"description": "answer, ranked passages with provenance, trace, "
                                       "usage; a query whose LLM failed or missed its "
                                       "deadline (HOPINDEX_QUERY_LLM_DEADLINE_S) is still a "
                                       "200, with answer null and the step in degraded. "
                                       "With \"stream\": true (or Accept: text/event-stream): "
                                       "server-sent events, passages first, then the "
                                       "answer's text as it is written (comment lines keep "
                                       "the connection alive); an error before the first "
                                       "event is answered as JSON with its status",
                        "content": {**_json(ref("QueryResult")),
                                    EVENT_STREAM_TYPE: {"schema": ref("QueryServerSentEvent")}}},
                **_errors(404, 413, 415, 422)}, body=_json(ref("QueryRequest"))),
        },
        "/v1/indexes/{name}/export": {
            "parameters": [INDEX_PARAM],
            "get": {**_op("Export an index", {
                "200": {"description": "the export file `hopindex export` writes, streamed: "
                                       "JSON lines, a header first and an `end` record "
                                       "with the counts last (a body without it was cut "
                                       "short)",
                        "content": {EXPORT_TYPE: {"schema": {"type": "string"}}}},
                **_errors(404, 409)}),
                "description": "Everything the index is made of (documents, units with "
                               "their vectors, entity mentions, the methods' groups and "
                               "records), for `hopindex import` into other backends; 409 "
                               "(index_busy) while a job of the index runs"},
        },
        IMPORT_PATH: {
            "post": {**_op("Import an index", {
                **_ok(201, "imported: what the file held, per kind of record",
                      ref("TransferCounts")),
                **_errors(409, 413, 415, 422)},
                body={EXPORT_TYPE: {"schema": {
                    "type": "string", "description": "an export file, as GET "
                    "/v1/indexes/{name}/export streams it and `hopindex export` writes it "
                    "(uncompressed)"}}}),
                "description": "Loads an export file into a new index of the name its "
                               "header carries (a key limited to some indexes may import "
                               "only those): 409 (index_exists) when an index of that name "
                               "is here, 422 when the export's vectors come from another "
                               "embedding model than this server's, 400 naming the line of "
                               "a malformed file; at most HOPINDEX_API_MAX_BODY_BYTES "
                               f"({settings.api_max_body_bytes:,} bytes here)"},
        },
        RUN_PATH: {
            "parameters": [INDEX_PARAM, _param(
                "operation", "path", _operation_names(),
                "the operation, group.verb, as GET /v1/operations lists it")],
            "post": {**_op("Run an operation", {
                **_ok(200, "the operation's JSON value", {}),
                **_errors(404, 413, 415)}),
                "requestBody": {"required": False, "content": _json(_operation_params())},
                "description": "Runs an operation the index's method registers: a name no "
                               "method has is a 400 on field operation, one the index's "
                               "method lacks a 400 on field method naming the methods that "
                               "have it, a parameter it does not take or lacks a 400 naming "
                               "it; an operation that writes needs a write key (403 "
                               "otherwise)"},
        },
    }


def _operation_names() -> dict[str, Any]:
    """The names the installed methods register (a pattern when there are none)."""
    names = sorted({o.name for o in list_operations()})
    schema: dict[str, Any] = {"type": "string", "pattern": OPERATION_NAME_PATTERN}
    if names:
        schema["enum"] = names
    return schema


def _operation_params() -> dict[str, Any]:
    """The body: every parameter some operation takes, as text of at most its longest
    limit. Which operation takes which (and needs which) is each one's own: GET
    /v1/operations lists them, and a parameter the operation does not take, or one it
    needs left out, is a 400 naming it."""
    limits: dict[str, int] = {}
    for operation in list_operations():
        for param in operation.params:
            limits[param.name] = max(limits.get(param.name, 0), param.max_chars)
    return {"type": "object", "additionalProperties": False,
            "properties": {name: {"type": "string", "maxLength": limit}
                           for name, limit in sorted(limits.items())},
            "description": "the operation's parameters by name, as GET /v1/operations "
                           "lists them; none: an empty object or no body"}


def _metrics_path(settings: Settings) -> dict[str, Any]:
    public = settings.api_metrics_access is MetricsAccess.PUBLIC
    ok = {"200": {
        "description": "Prometheus text exposition format, or OpenMetrics when Accept "
                       "names application/openmetrics-text. Label values name indexes "
                       "only when a key is needed (the key's indexes) or with "
                       "HOPINDEX_API_METRICS_INDEX_LABELS=always; otherwise series are "
                       "summed over indexes",
        "content": {"text/plain": {"schema": {"type": "string"}},
                    "application/openmetrics-text": {"schema": {"type": "string"}}}}}
    responses = ok if public else {**ok, **_errors()}
    return {"/metrics": {"get": _op("Get metrics", responses, public=public, tag="service")}}


def _other_paths() -> dict[str, Any]:
    return {
        "/v1/jobs": {"get": _op("List jobs", {**_ok(200, "newest first", {
            "type": "object", "required": ["jobs"],
            "properties": {"jobs": {"type": "array", "items": ref("Job")}}}), **_errors()},
            tag="jobs", params=[INDEX_FILTER, _param(
                "limit", "query", {"type": "integer", "minimum": 1, "maximum": MAX_LIST,
                                   "default": DEFAULT_LIST}, "at most this many")])},
        "/v1/jobs/{job_id}": {"parameters": [JOB_PARAM], "get": _op(
            "Show a job", {**_ok(200, "the job record", ref("Job")), **_errors(404)},
            tag="jobs")},
        "/v1/jobs/{job_id}/cancel": {"parameters": [JOB_PARAM], "post": _op(
            "Cancel a job", {**_ok(200, "the job, cancelled", ref("Job")),
                             **_errors(404, 409)}, tag="jobs")},
        "/v1/jobs/{job_id}/resume": {"parameters": [JOB_PARAM], "post": {**_op(
            "Resume a job", {**_ok(200, "the job, running again", ref("Job")),
                             **_errors(404, 409, 413, 415, 422)}, tag="jobs"),
            "requestBody": {"required": False, "content": _json(ref("BudgetLimits"))},
            "description": "Continues a job paused on its LLM budget (state paused) where "
                           "it stopped; nothing it finished is redone. Limits given replace "
                           "the job's own: each is the job's new total, counting what it "
                           "spent. No body: the same limits. A job that is not paused is a "
                           "409 (job_not_paused)."}},
        "/v1/events": {"get": {**_op("Stream events", {
            "200": {"description": "server-sent events: `id:`, `event:` (the type) and "
                                   "`data:` (an Event as JSON) per event; comment lines keep "
                                   "the connection alive. A stream that falls behind the "
                                   "log's retention gets one `gap` event (an Error, "
                                   "events_gone, with `oldest_id` and `status` 410) and "
                                   "ends",
                    "content": {EVENT_STREAM_TYPE: {"schema": ref("ServerSentEvent")}}},
            **_errors(404, 410, 429)}, tag="events", params=[
            INDEX_FILTER,
            _param("from", "query", EVENT_ID,
                   "resume after this event id (default: from the oldest kept)"),
            _param("mode", "query", ref("StreamMode"),
                   "follow (default): keep streaming new events; backlog: end at the log's end"),
            _param("Last-Event-ID", "header", EVENT_ID,
                   "resume after this id (sent by reconnecting EventSource clients); wins "
                   "over `from`")]),
            "security": [{"bearerAuth": []}, {"eventToken": []}],
            "description": "With an API key, or (for a page's EventSource, which cannot "
                           "send a header) an event token for the index named by `index`: "
                           "`?index=NAME&token=TOKEN`. A token is refused on every other "
                           "route and index; a request that sends an API key is judged by "
                           "the key alone."}},
        "/v1/indexes/{name}/events/token": {"parameters": [INDEX_PARAM], "post": {**_op(
            "Issue an event token", {**_ok(200, "a read-only token for this index's events",
                                           ref("EventToken")), **_errors()}, tag="events"),
            "description": "For a page: fetch this with the API key, then open "
                           "`new EventSource('/v1/events?index=NAME&token=' + token)`. The "
                           "index need not exist yet."}},
        "/v1/webhooks": {
            "get": _op("List webhooks", {**_ok(200, "webhooks (without secrets)", {
                "type": "object", "required": ["webhooks"],
                "properties": {"webhooks": {"type": "array", "items": ref("Webhook")}}}),
                **_errors()}, tag="webhooks", params=[INDEX_FILTER]),
            "post": _op("Add a webhook", {**_ok(201, "registered; the secret is shown once", {
                "allOf": [ref("Webhook"), {"type": "object", "required": ["secret"],
                                           "properties": {"secret": {"type": "string"}}}]}),
                **_errors(413, 415)}, tag="webhooks", body=_json(ref("NewWebhook"))),
        },
        OPERATIONS_PATH: {"get": _op("List operations", {**_ok(
            200, "the operations index methods register, by method then name", {
                "type": "object", "required": ["operations"],
                "properties": {"operations": {"type": "array",
                                              "items": ref("OperationInfo")}}}),
            **_errors()}, tag="operations", params=[_param(
                "method", "query", {"type": "string", "enum": index_method_names()},
                "only this index method's operations")])},
        "/v1/webhooks/{webhook_id}": {
            "parameters": [_param("webhook_id", "path", {"type": "string"}, "webhook id")],
            "delete": _op("Remove a webhook", {**_ok(204, "removed", None), **_errors(404)},
                          tag="webhooks")},
        "/v1/openapi.json": {"get": _op("Get this specification", _ok(
            200, "OpenAPI 3.1", {"type": "object"}), public=True, tag="service")},
        **_docs_paths(),
        "/healthz": {"get": _op("Check liveness", _ok(200, "the process answers", {
            "type": "object", "properties": {"status": {"const": "ok"}}}), public=True,
            tag="service")},
        "/readyz": {"get": _op("Check readiness", {
            **_ok(200, "every backend answers", ref("Readiness")),
            "503": {"description": "a backend does not answer",
                    "content": _json(ref("Readiness"))}}, public=True, tag="service")},
    }


def _docs_paths() -> dict[str, Any]:
    def text(media: str, description: str) -> dict[str, Any]:
        return {"200": {"description": description,
                        "content": {media: {"schema": {"type": "string"}}}}}

    return {
        DOCS_PATH: {"get": _op("Show the API reference", text(
            HTML_TYPE, "a page that renders this document (Redoc, served from here)"),
            public=True, tag="service")},
        DOCS_SLASH_PATH: {"get": _op("Redirect to the API reference", {
            "308": {"description": f"to {DOCS_PATH} (Location: {DOCS_FROM_SLASH}, relative "
                                   "so that it holds behind a path prefix)",
                    "headers": {"Location": {"schema": {"type": "string"}}}}},
            public=True, tag="service")},
        BUNDLE_PATH: {"get": _op("Get the API reference script", {
            **text(SCRIPT_TYPE, "the Redoc bundle the page runs"),
            "304": {"description": "unchanged since the ETag sent in If-None-Match"}},
            public=True, tag="service")},
    }


def build_spec(settings: Settings) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "hopindex", "version": "1",
                 "description": "Multi-hop retrieval: ingest documents into indexes, follow "
                                "the jobs, query. Every error is JSON naming the field or "
                                "line at fault, including requests the server cannot read "
                                "(an unknown method: 501; a request line over "
                                f"{MAX_REQUEST_LINE_BYTES:,} bytes: 414; a header over "
                                f"{MAX_HEADER_BYTES:,} bytes: 431; malformed: 400). "
                                + _JSON_LIMITS},
        "security": [{"bearerAuth": []}],
        "paths": {**_index_paths(settings), **_other_paths(), **_metrics_path(settings)},
        "components": _components(settings),
    }


def _components(settings: Settings) -> dict[str, Any]:
    # The link schemas sit in openapi/links.py, which imports schemas.py's helpers, so
    # schemas.py cannot list them itself.
    found = components(settings)
    found["schemas"].update(LINK_SCHEMAS)
    found["schemas"].update(PLAN_SCHEMAS)
    found["schemas"].update(BUDGET_SCHEMAS)
    graft(found["schemas"]["Job"], **JOB_FIELDS)
    graft(found["schemas"]["IngestPlan"], **INGEST_PLAN_FIELDS)
    graft(found["schemas"]["IndexBudget"], budget=ref("Budget"))
    return found
