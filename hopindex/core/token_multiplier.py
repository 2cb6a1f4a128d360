"""The ingestion multiplier: LLM tokens a job spent per token of the corpus it read.

The yardstick peers publish for what an index costs beside its corpus: prompt tokens,
completion tokens and both, each over the corpus tokens, per phase of the index method
and for the job in all. A job's corpus tokens (``Job.corpus_tokens``) are counted when
its documents are read for it, with the dry run's estimator
(scheduler/dry_run_tokens.py ``document_tokens``); its LLM tokens are what the provider
reported (``Job.llm``). The two are different counts of different texts: the ratio says
how many times over the calls read and wrote the corpus, not a tokenizer's exact figure.

Pure arithmetic over anything that has prompt and completion tokens (a job's
``LlmUsage``, an evaluation's ``PhaseCost``): this module imports no model, so the job
record can use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

# A multiplier is read as "about 9.4x": four places keep the small ones of a big corpus
# (a phase at 0.0012x) and drop the float noise of the division.
MULTIPLIER_DECIMALS = 4


class TokenCounts(Protocol):
    """What a multiplier divides: tokens the provider reported."""

    @property
    def prompt_tokens(self) -> int: ...

    @property
    def completion_tokens(self) -> int: ...


@dataclass(frozen=True, slots=True)
class TokenMultiplier:
    """LLM tokens per corpus token: prompt, completion, and both (``total``)."""

    prompt: float
    completion: float

    @property
    def total(self) -> float:
        return self.prompt + self.completion

    def as_dict(self) -> dict[str, float]:
        return {"prompt": round(self.prompt, MULTIPLIER_DECIMALS),
                "completion": round(self.completion, MULTIPLIER_DECIMALS),
                "total": round(self.total, MULTIPLIER_DECIMALS)}


def token_multiplier(usage: TokenCounts, corpus_tokens: int | None) -> TokenMultiplier | None:
    """``usage``'s tokens per corpus token; None when there is no corpus to divide by: a
    job that read no document (a re-ingest of unchanged ones, a repair of failed groups
    only), one of a method without an LLM, or a record from before corpus tokens were
    counted. A ratio over nothing would be infinite or made up."""
    if corpus_tokens is None or corpus_tokens <= 0:
        return None
    return TokenMultiplier(prompt=usage.prompt_tokens / corpus_tokens,
                           completion=usage.completion_tokens / corpus_tokens)


def phase_multipliers(stages: Mapping[str, TokenCounts], corpus_tokens: int | None
                      ) -> dict[str, TokenMultiplier]:
    """Each phase's multiplier (by qualified name, sorted); empty with no corpus."""
    found = {name: token_multiplier(usage, corpus_tokens)
             for name, usage in sorted(stages.items())}
    return {name: multiplier for name, multiplier in found.items() if multiplier is not None}


def multiplier_record(total: TokenCounts, stages: Mapping[str, TokenCounts],
                      corpus_tokens: int | None) -> dict[str, Any] | None:
    """The job's multiplier as its record writes it (``token_multiplier``): the job in
    all, and per phase under ``stages``, as ``llm`` is laid out; None with no corpus."""
    overall = token_multiplier(total, corpus_tokens)
    if overall is None:
        return None
    return {**overall.as_dict(),
            "stages": {name: multiplier.as_dict()
                       for name, multiplier in phase_multipliers(stages, corpus_tokens).items()}}


def multiplier_text(value: float) -> str:
    """A multiplier as a person reads it: ``9.32x``; a small one keeps two significant
    digits (``0.0041x``) rather than reading as nothing."""
    return f"{value:.2f}x" if value >= 0.1 or value == 0 else f"{value:.2g}x"
