"""Embedding usage on a job record and in a query's usage: kept apart from the LLM
figures, read back from old records, and summed without inventing a cost."""

from __future__ import annotations

import pytest

from hopindex.core.embedding_usage import EmbeddingUsage, embedding_cost
from hopindex.core.models import Job, JobKind, LlmUsage
from hopindex.methods.base import QueryUsage


def test_the_job_record_keeps_embedding_usage_apart_from_llm() -> None:
    """``embedding`` round-trips through the record's JSON, next to an ``llm`` total it
    does not change."""
    job = Job(job_id="j", index="i", kind=JobKind.INGEST)
    job.add_llm_usage({"indexrag.stage1": LlmUsage(calls=2, prompt_tokens=100, cost=0.5)})
    job.embedding.add(EmbeddingUsage(requests=3, tokens=900, cost=embedding_cost(900, 0.02)))
    data = job.as_dict()
    assert data["embedding"] == {"requests": 3, "tokens": 900,
                                 "cost": pytest.approx(900 * 0.02 / 1e6)}
    assert data["llm"]["prompt_tokens"] == 100 and data["llm"]["cost"] == 0.5
    again = Job.from_dict(data)
    assert again.embedding == job.embedding
    assert again.llm_total.prompt_tokens == 100


def test_a_record_written_before_embedding_usage_reads_as_empty() -> None:
    """An older record without the field reads back with no requests, tokens or cost."""
    data = Job(job_id="j", index="i", kind=JobKind.INGEST).as_dict()
    del data["embedding"]
    assert Job.from_dict(data).embedding == EmbeddingUsage()


def test_unpriced_embedding_usage_has_no_cost_figure() -> None:
    """Without a price the record carries tokens and no ``cost`` key (absent, not 0), and
    a sum with an unpriced part has no cost either."""
    usage = EmbeddingUsage(requests=1, tokens=50, cost=embedding_cost(50, None))
    assert usage.as_dict() == {"requests": 1, "tokens": 50}
    priced = EmbeddingUsage(requests=1, tokens=10, cost=0.1)
    priced.add(usage)
    assert (priced.tokens, priced.cost) == (60, None)
    empty = EmbeddingUsage()
    empty.add(EmbeddingUsage(requests=1, tokens=10, cost=0.1))
    empty.add(EmbeddingUsage())  # a local embedder's nothing changes nothing
    assert empty == EmbeddingUsage(requests=1, tokens=10, cost=0.1)


@pytest.mark.parametrize(("llm", "embedding", "expected"), [
    # Both priced: the sum.
    (LlmUsage(calls=1, prompt_tokens=10, cost=0.25), EmbeddingUsage(1, 20, 0.5), 0.75),
    # No LLM call (a retrieval-only query): the embeddings' cost alone.
    (LlmUsage(), EmbeddingUsage(1, 20, 0.5), 0.5),
    # An unpriced LLM call makes the whole unknown, whatever the embeddings cost.
    (LlmUsage(calls=1, prompt_tokens=10), EmbeddingUsage(1, 20, 0.5), None),
    # Unpriced embeddings stay out of the cost: the LLM's figure is kept.
    (LlmUsage(calls=1, prompt_tokens=10, cost=0.25), EmbeddingUsage(1, 20, None), 0.25),
    # Nothing priced: no figure.
    (LlmUsage(), EmbeddingUsage(1, 20, None), None),
])
@pytest.mark.parametrize("embedding_first", [False, True])
def test_query_cost_combines_llm_and_embeddings(llm: LlmUsage, embedding: EmbeddingUsage,
                                                expected: float | None,
                                                embedding_first: bool) -> None:
    """``usage.cost`` per the rule in ``QueryUsage.add_embedding``, in either order, and
    ``embedding_tokens`` always reported."""
    usage = QueryUsage()
    if embedding_first:
        usage.add_embedding(embedding)
        usage.add_llm(llm)
    else:
        usage.add_llm(llm)
        usage.add_embedding(embedding)
    assert usage.cost == (None if expected is None else pytest.approx(expected))
    assert usage.as_dict()["embedding_tokens"] == 20
    assert ("cost" in usage.as_dict()) is (expected is not None)
