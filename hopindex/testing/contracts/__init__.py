"""Contract test suites, shipped so built-in and third-party code pass the same ones.

Each module holds a base class of pytest tests whose fixtures the adapter's (or the
method's) own test class provides; subclassing it, with a name pytest collects
(``Test...``), runs every contract test against that code::

    from hopindex.testing.contracts import VectorStoreContract

    class TestMyVectorStore(VectorStoreContract):
        @pytest.fixture
        def store(self) -> Iterator[VectorStore]:
            store = MyVectorStore()
            yield store
            store.close()

- ``vector_store.VectorStoreContract``: a ``VectorStore`` (``store`` fixture; with
  ``persistent = True``, also ``reopen_store``: a second instance over the same data).
- ``keyword_index.KeywordIndexContract``: a ``KeywordIndex`` (the same fixtures).
- ``state_store.StateStoreContract``: a ``StateStore`` (the same fixtures); mix in
  ``groups.GroupsContract`` beside it for its groups and records.
- ``event_log.EventLogContract``: an ``EventLog`` (``log``, ``reopen_log`` and the id
  hooks its docstring names).
- ``event_retention.EventRetentionContract``: an ``EventLog``'s retention
  (``open_retained_log``, and ``read_method`` as above).
- ``embedder.EmbedderContract``: an ``Embedder`` backend.
- ``reranker.RerankerContract``: a ``Reranker`` (``reranker`` fixture, reporting to the
  suite's ``observer``).
- ``response_cache.ResponseCacheContract``: an LLM ``ResponseCache``.
- ``rate_limiter.RateLimiterContract``: an LLM ``RateLimiter``.
- ``query_method.QueryMethodContract``: every registered query method, over indexes
  built by every index method it can read.
- ``index_method.IndexMethodContract``: one index method, driven through the service.

Every class can be imported from this package or from its module; a module is
imported on first use of one of its names, so running one suite does not load the
others (the method suites start the whole service). The modules also hold the record
builders their tests use (``vector_store.record``, ``state_records.new_job``, …).

These modules import pytest, which the package does not depend on: install it (the
``dev`` extra) where they run. Nothing in hopindex imports them (an import-linter
contract in pyproject.toml keeps it so).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from hopindex.testing.contracts.embedder import EmbedderContract
    from hopindex.testing.contracts.event_log import EventLogContract
    from hopindex.testing.contracts.event_retention import EventRetentionContract
    from hopindex.testing.contracts.groups import GroupsContract
    from hopindex.testing.contracts.index_method import IndexMethodContract
    from hopindex.testing.contracts.keyword_index import KeywordIndexContract
    from hopindex.testing.contracts.query_method import QueryMethodContract
    from hopindex.testing.contracts.rate_limiter import RateLimiterContract
    from hopindex.testing.contracts.reranker import RerankerContract
    from hopindex.testing.contracts.response_cache import ResponseCacheContract
    from hopindex.testing.contracts.state_store import StateStoreContract
    from hopindex.testing.contracts.vector_store import VectorStoreContract

# Each contract class → the module that holds it.
_MODULES = {
    "EmbedderContract": "embedder",
    "EventLogContract": "event_log",
    "EventRetentionContract": "event_retention",
    "GroupsContract": "groups",
    "IndexMethodContract": "index_method",
    "KeywordIndexContract": "keyword_index",
    "QueryMethodContract": "query_method",
    "RateLimiterContract": "rate_limiter",
    "RerankerContract": "reranker",
    "ResponseCacheContract": "response_cache",
    "StateStoreContract": "state_store",
    "VectorStoreContract": "vector_store",
}

__all__ = ["EmbedderContract", "EventLogContract", "EventRetentionContract", "GroupsContract",
           "IndexMethodContract", "KeywordIndexContract", "QueryMethodContract",
           "RateLimiterContract", "RerankerContract", "ResponseCacheContract",
           "StateStoreContract", "VectorStoreContract"]

# pytest rewrites the asserts of test modules only: registered before the contract
# modules are imported, theirs report the values compared too.
pytest.register_assert_rewrite(*(f"{__name__}.{module}" for module in (
    *_MODULES.values(), "failed_items", "state_records", "state_store_parts")))


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
