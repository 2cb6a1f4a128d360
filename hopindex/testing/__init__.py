"""Test doubles shipped with the package, because tests and benchmarks both start them.

``hopindex.testing.llm_server`` is a local OpenAI-compatible server (chat completions,
embeddings) whose replies are computed deterministically from the prompt; it is the
only stand-in for the paid LLM API. ``hopindex.testing.llm_responses`` holds the
prompt markers it recognises, which hopindex's own prompts must contain.
``hopindex.testing.workers`` and ``redis_server`` start worker processes and a private
Redis; ``waiting`` waits on a condition with a deadline. ``hopindex.testing.contracts``
holds the contract suites (vector store, keyword index, state store, event log,
embedder, response cache, rate limiter, index method, query method) that built-in and
third-party code inherit; it needs pytest.
"""
