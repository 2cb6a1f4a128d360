"""Contract test suites, shipped so built-in and third-party code pass the same ones.

Each module holds a base class of pytest tests whose fixtures the adapter's (or the
method's) own test class provides; subclassing it, with a name pytest collects
(``Test...``), runs every contract test against that code::

    from hopindex.testing.contracts.embedder import EmbedderContract

    class TestMyEmbedder(EmbedderContract):
        @pytest.fixture
        def embedder(self) -> Embedder:
            return MyEmbedder()

- ``embedder.EmbedderContract``: an ``Embedder`` backend.
- ``response_cache.ResponseCacheContract``: an LLM ``ResponseCache``.
- ``rate_limiter.RateLimiterContract``: an LLM ``RateLimiter``.
- ``query_method.QueryMethodContract``: every registered query method, over indexes
  built by every index method it can read.
- ``index_method.IndexMethodContract``: one index method, driven through the service.

These modules import pytest, which the package does not depend on: install it (the
``dev`` extra) where they run. Nothing in hopindex imports them.
"""

import pytest

# pytest rewrites the asserts of test modules only: registered before the contract
# modules are imported, theirs report the values compared too.
pytest.register_assert_rewrite(*(f"{__name__}.{module}" for module in (
    "embedder", "index_method", "query_method", "rate_limiter", "response_cache")))
