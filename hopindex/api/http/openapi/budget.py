"""The OpenAPI components of LLM budgets: the limits an ingest's query parameters give,
and the budget and pause a job record shows (core/budget.py, scheduler/pause.py). The
body that gives limits (a resume's, an index's default) and the index's default as
answered are models (requests.BudgetRequest, models.IndexBudget)."""

from __future__ import annotations

from hopindex.api.http.openapi.schemas import Schema, obj, ref
from hopindex.core.budget import MAX_COST, MAX_LLM_TOKENS

TOKENS: Schema = {"type": "integer", "minimum": 0,
                  "description": "the most prompt and completion tokens the job's LLM calls "
                                 "may use, in all"}
COST: Schema = {"type": "number", "minimum": 0,
                "description": "the most the job's LLM calls may cost, in all, at the prices "
                               "the server sets (HOPINDEX_LLM_PRICE_*), in their currency; "
                               "a 422 (not_configured) on a server with no prices"}

# As a job record and an index show it: only the limits that are set.
BUDGET = obj({MAX_LLM_TOKENS: TOKENS, MAX_COST: COST}, closed=True)
BUDGET["description"] = ("what a job's LLM calls may use before it pauses; a limit left "
                         "out is not set, and an empty object is no budget")

_SPEND = obj({"tokens": {"type": "integer", "minimum": 0}, "cost": {"type": "number",
                                                                   "minimum": 0}})
PAUSE = obj({"limits": ref("Budget"), "spent": _SPEND, "held": _SPEND, "next_call": _SPEND,
             "stage": {"type": "string", "description": "the phase whose call was refused"}})
PAUSE["description"] = ("why a paused job paused: its limits, what settled calls spent, "
                        "what calls in flight held, and the refused call's estimate; empty "
                        "when the job is not paused")

# The budget parts of a job record (wire.JobView), grafted onto its component by
# spec.py: shapes shared with the index's default budget.
JOB_FIELDS: dict[str, Schema] = {"budget": ref("Budget"), "pause": ref("JobPause")}

BUDGET_SCHEMAS: dict[str, Schema] = {"Budget": BUDGET, "JobPause": PAUSE}
