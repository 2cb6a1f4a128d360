"""Rerankers: one relevance score per candidate text for a query (the ``Reranker``
protocol of ``backends/protocols.py``), asked between retrieval and the answer.

- ``http_reranker.py``: ``HttpReranker``, a ``/rerank`` service (Cohere, Jina, vLLM or
  Hugging Face TEI; the wire shapes are in ``wire.py``) called through
  ``http_client.py``, with the LLM client's rate limiter, retries and response cache;
- ``cross_encoder.py``: ``CrossEncoderReranker``, a local sentence-transformers
  cross-encoder read from a folder, on CPU;
- ``scores_cache.py``: both cache their scores in the LLM response cache, under keys
  of their own;
- ``observer.py``: what both report (requests, durations, cache lookups) to the
  metrics, without importing a metrics library.

``backends/registry.py`` opens the one the settings name (``open_reranker``).
"""
