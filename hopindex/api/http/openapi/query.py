"""The OpenAPI components of a query's answer (``POST /v1/indexes/{name}/query``):
the result, its passages and the steps that degraded (methods/base.py ``QueryResult``)."""

from __future__ import annotations

from hopindex.api.http.openapi.schemas import COST, INDEX_NAME, NUMBER, Schema, obj, ref

PASSAGE: Schema = obj({
    "rank": {"type": "integer"}, "doc_id": {"type": "string"}, "title": {"type": "string"},
    "text": {"type": "string"}, "score": NUMBER,
    "via": obj({"unit_id": {"type": "string"}, "kind": {"type": "string"},
                "text": {"type": "string"}}, ("unit_id", "kind", "text")),
}, ("rank", "doc_id", "title", "text", "score", "via"))

DEGRADATION: Schema = obj({
    "step": {"type": "string", "description": "the step that did not run as designed: "
                                              "answer, decompose, plan, judge, reasoning "
                                              "step 2, ..."},
    "reason": {"type": "string", "description": "why: the LLM error's message (the "
                                                "query's LLM deadline passed, an unusable "
                                                "reply, a refused request) or the method's "
                                                "note on its fallback"},
}, ("step", "reason"))

WARNING: Schema = obj({
    "code": {"type": "string", "description": "stable, for programs: index_partial (the "
                                              "index holds documents or items not fully "
                                              "indexed), index_building (a job is "
                                              "changing it)"},
    "message": {"type": "string", "description": "for people: the index's status, what "
                                                 "is outstanding and what completes it "
                                                 "(a repair, or waiting for the job)"},
}, ("code", "message"))

QUERY_RESULT: Schema = obj({
    "question": {"type": "string"}, "method": {"type": "string"}, "index": INDEX_NAME,
    "answer": {"type": ["string", "null"],
               "description": "null from a retrieval-only method, or when the answer step "
                              "degraded (see degraded): the passages are still returned"},
    "answer_truncated": {"type": "boolean",
                         "description": "the answer reply was cut at its token budget "
                                        "(finish_reason length); the answer is kept"},
    "degraded": {"type": "array", "items": ref("Degradation"),
                 "description": "every step that degraded, LLM or not; empty when none did. "
                                "A failed LLM step is never an error status: the query "
                                "answers 200 with what it retrieved"},
    "passages": {"type": "array", "items": ref("Passage")},
    "trace": {"type": "object", "description": "the method's decisions, step by step "
                                               "(degraded repeated in it)"},
    "usage": obj({"cost": COST, "llm_calls": {"type": "integer"},
                  "prompt_tokens": {"type": "integer"},
                  "completion_tokens": {"type": "integer"}, "cache_hits": {"type": "integer"},
                  "embedding_tokens": {"type": "integer", "minimum": 0,
                                       "description": "tokens a remote embedder reported "
                                                      "(0: a local model); in cost only "
                                                      "when the embedding price is set"},
                  "phases_s": {"type": "object", "additionalProperties": NUMBER},
                  "replies": {"type": "object", "additionalProperties": {"type": "integer"},
                              "description": "what reading the LLM replies forgave, only "
                                             "when something was: coerced, dropped, "
                                             "rescaled (0-1 scores read on 0-10), "
                                             "truncated"}},
                 ("llm_calls", "prompt_tokens", "completion_tokens")),
    "latency_s": {"type": "number", "minimum": 0,
                  "description": "the query's own time, without embedder_load_s"},
    "embedder_load_s": {"type": "number", "minimum": 0,
                        "description": "seconds the query waited for the embedding model "
                                       "to load and warm up (its first use in the "
                                       "server's process); 0 once it is loaded"},
    "warnings": {"type": "array", "items": ref("QueryWarning"),
                 "description": "what the answer rests on that the caller should know: "
                                "an index that is partial or building still answers, "
                                "with a warning naming its status and the fix; empty "
                                "when there is none"},
}, ("question", "method", "index", "answer", "answer_truncated", "degraded", "passages",
    "trace", "usage", "latency_s", "embedder_load_s", "warnings"))

QUERY_SCHEMAS: dict[str, Schema] = {"Passage": PASSAGE, "Degradation": DEGRADATION,
                                    "QueryWarning": WARNING, "QueryResult": QUERY_RESULT}
