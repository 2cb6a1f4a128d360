"""What the OpenAPI document says of an ingest dry run (``POST /v1/indexes/{name}/
documents?dry_run=true``) beyond its model (models.IngestPlanView, whose phases and
embedding are dicts the planner builds, scheduler/dry_run.py): each phase's plan and
the fields' shapes, grafted onto the model's component."""

from __future__ import annotations

from hopindex.api.http.openapi.schemas import INDEX_NAME, Schema, enum_of, obj, ref
from hopindex.scheduler.dry_run_plan import Planning
from hopindex.scheduler.dry_run_tokens import TokenBasis

COUNT: Schema = {"type": "integer", "minimum": 0}
OPTIONAL_COUNT: Schema = {"type": ["integer", "null"], "minimum": 0}

PHASE_PLAN = obj({
    "phase": {"type": "string", "description": "qualified name: indexrag.stage1"},
    "kind": {"type": "string", "enum": ["documents", "groups", "levels"]},
    "planning": {**enum_of(Planning),
                 "description": "exact: the requests themselves, less the cache's hits; "
                                "bound: at most `calls`; not_planned: the method cannot say "
                                "before the calls before it; no_llm: the method calls none"},
    "calls": {**OPTIONAL_COUNT, "description": "LLM calls (an upper bound when planning is "
                                               "bound; null when not planned)"},
    "basis": {"type": "string", "description": "how the calls were planned or bounded"},
    "cache_hits": {**COUNT, "description": "planned requests the response cache answers "
                                           "already (not in calls)"},
    "prompt_chars": {**OPTIONAL_COUNT, "description": "characters of the planned prompts"},
    "input_chars": {**OPTIONAL_COUNT, "description": "characters (title and text) of the "
                                                     "documents the planned prompts carry"},
    "prompt_tokens": OPTIONAL_COUNT, "completion_tokens": OPTIONAL_COUNT,
    "token_basis": {**enum_of(TokenBasis),
                    "description": "history: prompt tokens per prompt character and "
                                   "completion tokens per document character the provider "
                                   "reported on this index's earlier jobs of the phase and "
                                   "model; history_per_call: tokens per call on those jobs "
                                   "(no characters on record, or prompts not known yet); "
                                   "characters: 0.25 tokens per prompt character and 256 "
                                   "completion tokens per call, an approximation for "
                                   "English text"},
    "cost": {"type": ["number", "null"], "minimum": 0,
             "description": "the estimated tokens at the configured prices (an upper "
                            "estimate when planning is bound); null: unpriced or unknown"},
}, ("phase", "kind", "planning", "calls", "basis", "cache_hits", "prompt_chars",
    "prompt_tokens", "completion_tokens", "token_basis"))

# Onto the IngestPlan component (the model's), by field.
INGEST_PLAN_FIELDS: dict[str, Schema] = {
    "index": INDEX_NAME,
    "model": {"description": "the LLM model the cache keys name"},
    "documents": obj({**dict.fromkeys(("new", "changed", "unchanged", "invalid"), COUNT),
                      "removed": {**COUNT, "description": "documents of the files read "
                                  "again that their new reading lacks (sections deleted "
                                  "or renamed): the ingest deletes them"}},
                     ("new", "changed", "unchanged", "invalid", "removed")),
    "phases": {"items": ref("PhasePlan")},
    "errors": {"items": obj({
        "item": {"type": "string"}, "stage": {"type": "string"},
        "reason": {"type": "string"}, "where": {"type": "string"}},
        ("item", "stage", "reason"))},
    "embedding": {"oneOf": [{"type": "null"}, obj({
        "model": {"type": "string"},
        "tokens": {**COUNT, "description": "the least the provider's embeddings take: "
                                           "the documents to embed, 0.25 tokens per "
                                           "character"},
        "cost": {"type": ["number", "null"], "minimum": 0,
                 "description": "at HOPINDEX_EMBEDDING_PRICE_PER_MTOK; null: unpriced"},
        "basis": {"type": "string"}}, ("model", "tokens", "cost", "basis"))],
                  "description": "embeddings at a provider (openai://); null with a local "
                                 "model"},
}

PLAN_SCHEMAS: dict[str, Schema] = {"PhasePlan": PHASE_PLAN}
