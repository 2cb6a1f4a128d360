"""The OpenAI-compatible embedder against the local test server, through the real SDK:
shapes, order, batching, learned dimension, retries and the errors that end them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from structlog.testing import capture_logs

from hopindex.backends.embedder import OpenAiEmbedder
from hopindex.backends.embedder.metering import metered_embeddings
from hopindex.backends.protocols import Embedder
from hopindex.core.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigError,
    LlmAuthenticationError,
)
from hopindex.testing.contracts.embedder import EmbedderContract
from hopindex.testing.llm_limits import Endpoint, Outcome
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer, running_llm_server
from hopindex.testing.redis_server import free_port

pytestmark = pytest.mark.integration

MODEL = "hopindex-test-embedding"
TEXTS = ["Marie Curie was born in Warsaw.", "Warsaw is the capital of Poland.",
         "Photosynthesis converts light into chemical energy."]


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[LlmTestServer]:
    config: LlmServerConfig = getattr(request, "param", LlmServerConfig(api_key="k"))
    with running_llm_server(config) as test_server:
        yield test_server


def make(server: LlmTestServer, **overrides: Any) -> OpenAiEmbedder:
    options: dict[str, Any] = {"api_key": "k", "timeout_s": 5.0, "backoff_base_s": 0.001}
    options.update(overrides)
    return OpenAiEmbedder(MODEL, base_url=server.base_url, **options)


def texts(count: int) -> list[str]:
    return [f"Sentence number {i} mentions entity{i} and topic{i % 3}." for i in range(count)]


class TestOpenAiEmbedder(EmbedderContract):
    """The ``Embedder`` contract over the test server's embeddings."""

    expected_dimension = 384
    expected_model_name = MODEL
    # The server computes each row from its own text alone; only float32 rounding of
    # the unit norm is left.
    atol = 1e-6

    @pytest.fixture
    def embedder(self, server: LlmTestServer) -> OpenAiEmbedder:
        return make(server)


def test_declared_dimension_costs_no_request(server: LlmTestServer) -> None:
    """With a declared dimension, checking the protocol and reading the dimension make no
    request."""
    embedder = make(server, dimension=384)
    assert isinstance(embedder, Embedder)
    assert embedder.dimension == 384
    assert server.stats.count(Endpoint.EMBEDDINGS) == 0


def test_related_texts_are_closer(server: LlmTestServer) -> None:
    """Texts sharing a word score a higher cosine than unrelated ones (the server's
    hashed bag of words), so retrieval over its vectors means something."""
    first = make(server).embed_texts(TEXTS)
    assert float(first[0] @ first[1]) > float(first[0] @ first[2])  # "Warsaw" is shared


def test_batches_of_batch_size_keep_input_order(server: LlmTestServer) -> None:
    """10 texts with batch_size=4 take 3 requests, and rows still follow input order."""
    batch = texts(10)
    vectors = make(server, batch_size=4).embed_texts(batch)
    assert server.stats.count(Endpoint.EMBEDDINGS, Outcome.OK) == 3
    one_by_one = np.stack([make(server).embed_query(text) for text in batch])
    np.testing.assert_allclose(vectors, one_by_one, atol=1e-7)


@pytest.mark.parametrize("server", [LlmServerConfig(embedding_dimension=64)], indirect=True)
def test_dimension_learned_from_the_server(server: LlmTestServer) -> None:
    """Undeclared, the dimension is the server's: read first, it costs one probe request;
    read after embedding, none; an empty input then has the right shape without a call."""
    probed = make(server)
    assert probed.dimension == 64
    assert server.stats.count(Endpoint.EMBEDDINGS) == 1
    learned = make(server)
    assert learned.embed_texts(TEXTS).shape == (3, 64)
    assert learned.dimension == 64
    empty = learned.embed_texts([])
    assert empty.shape == (0, 64)
    assert empty.dtype == np.float32
    assert server.stats.count(Endpoint.EMBEDDINGS) == 2


@pytest.mark.parametrize("server", [LlmServerConfig(embedding_dimension=64)], indirect=True)
def test_declared_dimension_mismatch_is_a_backend_error(server: LlmTestServer) -> None:
    """A model returning another size than declared fails loudly, naming both sizes, rather
    than writing vectors the collection cannot hold."""
    with pytest.raises(BackendError, match=r"64.*expected 384"):
        make(server, dimension=384).embed_texts(TEXTS)


def test_blank_texts_are_embedded_as_one_space(server: LlmTestServer) -> None:
    """Empty and whitespace-only texts each get a row (the same one: a single space), so a
    blank chunk never fails its batch."""
    vectors = make(server).embed_texts(["", "   \n", TEXTS[0], " "])
    assert vectors.shape == (4, 384)
    np.testing.assert_array_equal(vectors[0], vectors[3])
    np.testing.assert_array_equal(vectors[1], vectors[3])
    assert server.stats.count(Endpoint.EMBEDDINGS, Outcome.BAD_REQUEST) == 0


@pytest.mark.parametrize("server", [LlmServerConfig(fail_500=0.5, seed=3)], indirect=True)
def test_server_errors_are_retried_until_every_text_is_embedded(
        server: LlmTestServer) -> None:
    """With half the requests failing 500, every batch is retried until it succeeds and
    the result equals a fault-free run."""
    batch = texts(20)
    vectors = make(server, batch_size=2, max_attempts=20).embed_texts(batch)
    stats = server.stats
    assert stats.count(Endpoint.EMBEDDINGS, Outcome.SERVER_ERROR) > 0
    assert stats.count(Endpoint.EMBEDDINGS, Outcome.OK) == 10
    with running_llm_server() as clean:
        expected = make(clean, batch_size=2).embed_texts(batch)
    np.testing.assert_allclose(vectors, expected, atol=1e-7)


@pytest.mark.parametrize(
    "server", [LlmServerConfig(fail_429=0.5, seed=1, fault_retry_after_s=0.05)], indirect=True)
def test_rate_limits_are_retried_after_their_retry_after(server: LlmTestServer) -> None:
    """Injected 429s are retried, each no sooner than the 50 ms its Retry-After asks for
    (far above the 1 ms backoff base), and every text is embedded."""
    started = time.perf_counter()
    vectors = make(server, batch_size=2, max_attempts=20).embed_texts(texts(12))
    elapsed_s = time.perf_counter() - started
    limited = server.stats.count(Endpoint.EMBEDDINGS, Outcome.RATE_LIMITED)
    assert vectors.shape == (12, 384)
    assert limited > 0
    assert server.stats.count(Endpoint.EMBEDDINGS, Outcome.OK) == 6
    # A lower bound, which load only helps: batches go one after another, and each 429
    # (none was the last attempt: every batch succeeded) is followed by a sleep of at
    # least its 50 ms, on the monotonic clock perf_counter reads.
    assert elapsed_s >= limited * 0.05


def test_wrong_api_key_fails_at_once(server: LlmTestServer) -> None:
    """A refused key is an ``LlmAuthenticationError`` (a setting to fix) after exactly one
    request: retrying cannot help."""
    with capture_logs() as logs, pytest.raises(LlmAuthenticationError, match="API key"):
        make(server, api_key="wrong").embed_texts(TEXTS)
    assert server.stats.count(Endpoint.EMBEDDINGS) == 1
    assert server.stats.count(Endpoint.EMBEDDINGS, Outcome.UNAUTHORIZED) == 1
    assert not [entry for entry in logs if entry["event"] == "embedding_retry"]


def test_other_client_errors_are_not_retried(server: LlmTestServer) -> None:
    """A 404 (here: a wrong base path) is a ``BackendError`` raised on the first reply,
    not a retryable outage."""
    embedder = OpenAiEmbedder(MODEL, base_url=f"{server.root_url}/no-such-api", api_key="k",
                              backoff_base_s=0.001)
    with capture_logs() as logs, pytest.raises(BackendError, match="404") as caught:
        embedder.embed_texts(TEXTS)
    assert not isinstance(caught.value, BackendUnavailableError)
    assert not [entry for entry in logs if entry["event"] == "embedding_retry"]


def test_server_down_is_unavailable_after_max_attempts() -> None:
    """Nothing listening: every attempt fails to connect, the loop gives up after
    ``max_attempts`` (retrying in between) with a retryable ``BackendUnavailableError``."""
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    embedder = OpenAiEmbedder(MODEL, base_url=base_url, api_key="k", max_attempts=3,
                              backoff_base_s=0.001, timeout_s=2.0)
    with capture_logs() as logs, pytest.raises(BackendUnavailableError,
                                               match="failed 3 times") as caught:
        embedder.embed_texts(TEXTS)
    assert caught.value.retryable
    retries = [entry for entry in logs if entry["event"] == "embedding_retry"]
    assert [entry["attempt"] for entry in retries] == [1, 2]


@pytest.mark.parametrize("bad", [{"batch_size": 0}, {"dimension": 0}, {"max_attempts": 0},
                                 {"timeout_s": 0.0}, {"backoff_base_s": -1.0}])
def test_bad_settings_are_config_errors(bad: dict[str, float]) -> None:
    """Impossible settings fail at construction, before any request."""
    options: dict[str, Any] = {"base_url": "http://127.0.0.1:1/v1", "api_key": "k", **bad}
    with pytest.raises(ConfigError):
        OpenAiEmbedder(MODEL, **options)


def test_the_meter_counts_the_servers_requests_and_tokens(server: LlmTestServer) -> None:
    """Inside ``metered_embeddings()`` every reply adds one request and the tokens its
    ``usage`` reported: the meter ends equal to the server's own counts."""
    with metered_embeddings() as meter:
        make(server, batch_size=4).embed_texts(texts(10))
    stats = server.stats
    assert stats.embedding_tokens > 0
    assert meter.requests == stats.count(Endpoint.EMBEDDINGS) == 3
    assert meter.tokens == stats.embedding_tokens


def test_calls_outside_a_meter_are_not_counted_and_meters_nest(
        server: LlmTestServer) -> None:
    """A call made after the block leaves the meter as it was; an inner meter counts its
    own calls and the meter around it counts both."""
    embedder = make(server, dimension=384)
    with metered_embeddings() as outer:
        embedder.embed_query("Warsaw")
        with metered_embeddings() as inner:
            embedder.embed_query("Photosynthesis converts light.")
    embedder.embed_query("not metered")
    assert (inner.requests, outer.requests) == (1, 2)
    assert 0 < inner.tokens < outer.tokens
    assert outer.tokens < server.stats.embedding_tokens  # the unmetered call was served
