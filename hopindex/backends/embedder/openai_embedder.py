"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, TEI…).

The SDK's own retries are off: our loop retries 429, 5xx, timeouts and
connection errors with full-jitter exponential backoff, honours a reply's
``Retry-After``, and stops after ``max_attempts`` with a retryable
``BackendUnavailableError``. A refused key is a setting to fix, not a fault to
retry. ``openai`` is imported on first construction, so importing the embedder
package stays as light as choosing the local model.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hopindex.backends.embedder.metering import record_embedding_request
from hopindex.backends.llm.retry import full_jitter_s, retry_after_s
from hopindex.backends.protocols import Vector
from hopindex.core.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigError,
    LlmAuthenticationError,
)
from hopindex.core.logging import get_logger
from hopindex.core.redact import redact_url

if TYPE_CHECKING:
    import openai

log = get_logger(__name__)

BACKOFF_MAX_S = 30.0
# Embedded only to learn the dimension when it is asked for before any text was.
_PROBE_TEXT = "dimension probe"
# Worth retrying besides every 5xx: 408 (the server's own timeout) and 429 (its load).
_RETRYABLE_STATUS = frozenset({408, 429})


class OpenAiEmbedder:
    """``Embedder`` over the synchronous ``openai.OpenAI`` client.

    ``dimension``, when given, is what the model is expected to return (a vector
    collection is opened with it before the first call); a reply of another size
    is a ``BackendError``. Left None, it is learned from the first reply.
    """

    def __init__(self, model: str, *, base_url: str, api_key: str,
                 dimension: int | None = None, batch_size: int = 256,
                 timeout_s: float = 60.0, max_attempts: int = 6,
                 backoff_base_s: float = 0.5) -> None:
        if not model:
            raise ConfigError("HOPINDEX_EMBEDDER_URL: an OpenAI-compatible embedder needs a "
                              "model name")
        if dimension is not None and dimension < 1:
            raise ConfigError(f"embedding dimension must be positive, got {dimension}")
        if batch_size < 1:
            raise ConfigError(f"embedder batch size must be positive, got {batch_size}")
        if timeout_s <= 0 or max_attempts < 1 or backoff_base_s < 0:
            raise ConfigError("embedder timeout must be positive, attempts at least 1 and "
                              "backoff not negative")
        import openai

        self._model = model
        # Only ever quoted in messages: shown without the credentials it may carry.
        self._base_url = redact_url(base_url)
        self._dimension = dimension
        self._batch_size = batch_size
        self._max_attempts = max_attempts
        self._backoff_base_s = backoff_base_s
        try:
            self._client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0,
                                         timeout=timeout_s)
        except openai.OpenAIError as exc:  # no key given and none in OPENAI_API_KEY
            raise ConfigError(f"embedder at {redact_url(base_url)}: {exc}") from exc

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            # Costs one tiny call, once: the vector store needs the size before any text.
            self._dimension = int(self._embed_batch([_PROBE_TEXT]).shape[1])
        return self._dimension

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()

    def embed_texts(self, texts: Sequence[str]) -> Vector:
        """Unit-length float32 rows, one per text, in input order."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        batches = [self._embed_batch(texts[start:start + self._batch_size])
                   for start in range(0, len(texts), self._batch_size)]
        result: Vector = np.concatenate(batches) if len(batches) > 1 else batches[0]
        return result

    def embed_query(self, text: str) -> Vector:
        """One text as a 1-D vector, embedded exactly as ``embed_texts`` would."""
        row: Vector = self.embed_texts([text])[0]
        return row

    def _embed_batch(self, texts: Sequence[str]) -> Vector:
        # OpenAI answers 400 to an empty string, which would fail a whole batch
        # for one blank chunk; a single space embeds as "nothing" and keeps the row.
        inputs = [text if text.strip() else " " for text in texts]
        response = self._call(inputs)
        record_embedding_request(_reported_tokens(response))
        return self._rows(response.data, len(inputs))

    def _call(self, inputs: list[str]) -> openai.types.CreateEmbeddingResponse:
        import openai  # already loaded by __init__: a dictionary look-up

        last_error = ""
        for attempt in range(1, self._max_attempts + 1):
            started = time.perf_counter()
            try:
                response = self._client.embeddings.create(
                    model=self._model, input=inputs, encoding_format="float")
            except openai.AuthenticationError as exc:
                raise LlmAuthenticationError(
                    f"the embedding provider at {self._base_url} refused the API key") from exc
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status not in _RETRYABLE_STATUS and status < 500:
                    raise BackendError(f"the embedding provider at {self._base_url} rejected "
                                       f"the request ({status}): {exc.message}") from exc
                last_error = exc.message
                delay_s = self._backoff_s(attempt)
                retry_after_s = _retry_after_s(exc)
                if retry_after_s is not None:
                    # The provider's own figure is a floor: going sooner only earns another 429.
                    delay_s = max(delay_s, retry_after_s)
            except openai.APIConnectionError as exc:  # APITimeoutError is one of these
                last_error = f"{type(exc).__name__}: {exc}"
                delay_s = self._backoff_s(attempt)
            except openai.APIError as exc:  # a reply the SDK could not parse
                raise BackendError(f"the embedding provider at {self._base_url} sent an "
                                   f"unusable reply: {exc}") from exc
            else:
                log.debug("embedding_batch_done", model=self._model, texts=len(inputs),
                          attempt=attempt, duration_s=round(time.perf_counter() - started, 3))
                return response
            if attempt == self._max_attempts:
                break
            log.warning("embedding_retry", model=self._model, attempt=attempt,
                        error=last_error, delay_s=round(delay_s, 3))
            time.sleep(delay_s)
        raise BackendUnavailableError(
            f"the embedding provider at {self._base_url} failed {self._max_attempts} times; "
            f"last: {last_error}")

    def _rows(self, data: Sequence[Any], expected: int) -> Vector:
        if len(data) != expected or sorted(item.index for item in data) != list(range(expected)):
            raise BackendError(f"the embedding provider at {self._base_url} returned "
                               f"{len(data)} vectors for {expected} texts")
        # Replies may list items out of order; each carries the index of its input.
        ordered = [item.embedding for item in sorted(data, key=lambda item: item.index)]
        try:
            matrix = np.asarray(ordered, dtype=np.float64)
        except (ValueError, TypeError) as exc:  # ragged rows, or not numbers at all
            raise BackendError(f"the embedding provider at {self._base_url} returned "
                               f"malformed vectors: {exc}") from exc
        if matrix.ndim != 2 or matrix.shape[1] < 1 or not np.isfinite(matrix).all():
            raise BackendError(f"the embedding provider at {self._base_url} returned "
                               f"malformed vectors (shape {matrix.shape})")
        if self._dimension is None:
            self._dimension = int(matrix.shape[1])
            log.info("embedder_dimension_learned", model=self._model,
                     dimension=self._dimension)
        elif matrix.shape[1] != self._dimension:
            raise BackendError(f"embedding model {self._model!r} returned {matrix.shape[1]}-"
                               f"dimensional vectors, expected {self._dimension}")
        # Not every provider normalises, and cosine = dot product needs unit rows.
        # Done in float64 so the float32 result is unit length to float32 precision;
        # an all-zero row (never a real embedding) stays zero rather than NaN.
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        unit: Vector = (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        return unit

    def _backoff_s(self, attempt: int) -> float:
        return full_jitter_s(attempt, self._backoff_base_s, BACKOFF_MAX_S)


def _retry_after_s(exc: openai.APIStatusError) -> float | None:
    return retry_after_s(exc.response.headers)


def _reported_tokens(response: openai.types.CreateEmbeddingResponse) -> int:
    # Some OpenAI-compatible servers leave usage out, or give only the total: the
    # prompt count is the one billed, and the total equals it for embeddings.
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0
    tokens = getattr(usage, "prompt_tokens", None) or getattr(usage, "total_tokens", None)
    return int(tokens or 0)
