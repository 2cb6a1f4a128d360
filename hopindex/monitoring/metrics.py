"""Every Prometheus metric hopindex records in-process (docs/architecture.md, prefix ``hopindex_``).

Labels are bounded sets: stages are task and request-stage names fixed in code,
methods the registered query methods, models the configured model, indexes the
operator's index names; never a document, query or job id.

Importing this module creates the metrics in prometheus_client's default registry.
A worker must set up multiprocess mode (``monitoring.multiprocess``) before the
first import, so its prefork children's values land in files the worker aggregates.
The gauges that come from Redis (queue depth, jobs, units) are not here: the
state collector (``monitoring.collector``) computes them at scrape time. Label
values are the enums of ``monitoring.labels``.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics

# A ``_created`` timestamp series per labelled child doubles the series count for
# nothing the dashboards or rules read.
disable_created_metrics()  # type: ignore[no-untyped-call]  # unannotated in prometheus_client

# Seconds: one request to the provider, from a fast cache-warm model to a slow long reply.
LLM_DURATION_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0)
WAIT_BUCKETS_S = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
QUERY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
PHASE_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                   5.0, 10.0)
# Seconds: one rerank request, from a local model's few milliseconds to a service's
# timeout (HOPINDEX_RERANK_TIMEOUT_S, 5 s by default).
RERANK_DURATION_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# Calls per query: 0 (extractive) up to ircot's 4 and the multi-call methods beyond.
CALL_BUCKETS = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0)
TOKEN_BUCKETS = (0.0, 100.0, 250.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 32000.0,
                 64000.0)
TASK_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
                  1800.0)
# LLM tokens per corpus token of one job's phase: a cheap completion (0.05x) up to the
# prompt side of phases that send each document many times (peers publish 5.7-12x per
# ingest in all).
MULTIPLIER_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0,
                      50.0, 100.0)


# -- LLM client (observer: monitoring/llm.py) ----------------------------------------
LLM_REQUESTS = Counter(
    "hopindex_llm_requests", "Requests sent to the LLM provider, by how each ended.",
    ["stage", "model", "outcome"])
LLM_TOKENS = Counter(
    "hopindex_llm_tokens", "Tokens the LLM provider reported, prompt and completion.",
    ["stage", "model", "kind"])
# Money in the operator's currency at HOPINDEX_LLM_PRICE_*_PER_MTOK; priced calls only.
LLM_COST = Counter(
    "hopindex_llm_cost", "What LLM requests cost at the configured prices (operator's currency).",
    ["stage", "model"])
LLM_REQUEST_DURATION = Histogram(
    "hopindex_llm_request_duration_seconds", "Duration of one request to the LLM provider.",
    ["stage", "model"], buckets=LLM_DURATION_BUCKETS_S)
LLM_CACHE_REQUESTS = Counter(
    "hopindex_llm_cache_requests", "LLM response-cache lookups, hit or miss.",
    ["stage", "result"])
LLM_CACHE_ERRORS = Counter(
    "hopindex_llm_cache_errors",
    "LLM response-cache reads and writes that failed; the call went on without the cache.",
    ["stage", "operation"])
LLM_REPLY_FIXES = Counter(
    "hopindex_llm_reply_fixes",
    "What LLM replies needed before they could be used: second requests (a repair call, "
    "a larger-budget retry; also counted in hopindex_llm_requests_total), output modes "
    "the provider refused, and values coerced, elements dropped, replies rescaled.",
    ["stage", "model", "fix"])
RATELIMIT_WAIT = Histogram(
    "hopindex_ratelimit_wait_seconds",
    "Time one LLM request waited for the shared rate limiter (requests/min, tokens/min, "
    "Retry-After).", ["stage", "model"], buckets=WAIT_BUCKETS_S)

# -- reranker (observer: monitoring/rerank.py) -------------------------------------------
RERANK_REQUESTS = Counter(
    "hopindex_rerank_requests",
    "Requests sent to the rerank service (or runs of the local cross-encoder), by how each "
    "ended.", ["model", "outcome"])
RERANK_REQUEST_DURATION = Histogram(
    "hopindex_rerank_request_duration_seconds",
    "Duration of one rerank request (or one run of the local cross-encoder).",
    ["model"], buckets=RERANK_DURATION_BUCKETS_S)
RERANK_CACHE_REQUESTS = Counter(
    "hopindex_rerank_cache", "Rerank score-cache lookups, hit or miss.", ["result"])
RERANK_CACHE_ERRORS = Counter(
    "hopindex_rerank_cache_errors",
    "Rerank score-cache reads and writes that failed; the call went on without the cache.",
    ["operation"])
RERANK_RATELIMIT_WAIT = Histogram(
    "hopindex_rerank_ratelimit_wait_seconds",
    "Time one rerank request waited for the shared rate limiter (requests/min, Retry-After).",
    ["model"], buckets=WAIT_BUCKETS_S)

# -- queries (monitoring/queries.py) ----------------------------------------------------
QUERIES = Counter(
    "hopindex_queries", "Queries answered (ok) or failed (error), by method.",
    ["method", "outcome"])
QUERY_DURATION = Histogram(
    "hopindex_query_duration_seconds", "Latency of one query, end to end.",
    ["method"], buckets=QUERY_BUCKETS_S)
QUERY_PHASE_DURATION = Histogram(
    "hopindex_query_phase_duration_seconds",
    "Time one query spent in one phase (embed, dense_search, fusion, judge, answer, ...).",
    ["method", "phase"], buckets=PHASE_BUCKETS_S)
QUERY_LLM_CALLS = Histogram(
    "hopindex_query_llm_calls", "LLM calls one query made (cache hits not included).",
    ["method"], buckets=CALL_BUCKETS)
QUERY_TOKENS = Histogram(
    "hopindex_query_tokens", "LLM tokens one query used, prompt and completion.",
    ["method", "kind"], buckets=TOKEN_BUCKETS)
QUERY_CACHE_HITS = Histogram(
    "hopindex_query_cache_hits", "LLM calls one query answered from the response cache.",
    ["method"], buckets=CALL_BUCKETS)
# Streamed queries only: what a person waits before the answer starts to show.
QUERY_FIRST_TOKEN = Histogram(
    "hopindex_query_first_token_seconds",
    "Time from a streamed query's start to the first text of its answer, by method.",
    ["method"], buckets=QUERY_BUCKETS_S)

# -- Celery tasks (monitoring/tasks.py) ---------------------------------------------------
STAGE_TASK_DURATION = Histogram(
    "hopindex_stage_task_duration_seconds", "Duration of one task run, by stage (task name).",
    ["stage"], buckets=TASK_BUCKETS_S)
STAGE_TASKS = Counter(
    "hopindex_stage_tasks", "Task runs by stage and how they ended.", ["stage", "outcome"])
STAGE_TASK_FAILURES = Counter(
    "hopindex_stage_task_failures", "Task runs that failed for good, by error type.",
    ["stage", "error"])
STAGE_TASK_RETRIES = Counter(
    "hopindex_stage_task_retries", "Task runs sent back to the queue for a retry, by error type.",
    ["stage", "error"])
# livesum: a prefork child that exits takes its running count with it (mark_process_dead).
STAGE_TASKS_IN_PROGRESS = Gauge(
    "hopindex_stage_tasks_in_progress", "Task runs executing now, by stage.", ["stage"],
    multiprocess_mode="livesum")
DOCUMENTS_INGESTED = Counter(
    "hopindex_documents_ingested",
    "Documents of finished jobs: indexed, unchanged (skipped), failed, or deleted.",
    ["index", "outcome"])
# The ingestion multiplier (monitoring/ingest_multiplier.py), once per finished job of
# an LLM method. The two counters move together at that moment, so their ratio over any
# window is the multiplier of the jobs that finished in it.
INGEST_TOKEN_MULTIPLIER = Histogram(
    "hopindex_ingest_token_multiplier",
    "LLM tokens one finished job spent per token of the corpus it read, by index method, "
    "phase and kind (prompt or completion).",
    ["method", "phase", "kind"], buckets=MULTIPLIER_BUCKETS)
INGEST_CORPUS_TOKENS = Counter(
    "hopindex_ingest_corpus_tokens",
    "Tokens of the documents finished jobs of an LLM index method read (0.25 per "
    "character, the dry run's estimate), by index method.", ["method"])
INGEST_LLM_TOKENS = Counter(
    "hopindex_ingest_llm_tokens",
    "LLM tokens of finished jobs that counted their corpus, by index method, phase and "
    "kind: over hopindex_ingest_corpus_tokens_total, the multiplier over time.",
    ["method", "phase", "kind"])

# -- webhooks (scheduler/webhook_delivery.py) ---------------------------------------------
WEBHOOK_DELIVERIES = Counter(
    "hopindex_webhook_deliveries",
    "Webhook delivery attempts and decisions: delivered, failed (to be retried), deferred "
    "(endpoint's breaker open), gave_up, refused (address not allowed), dropped (queue full "
    "or process closing), skipped (webhook removed).", ["outcome"])
