"""Token estimates of a dry run: from the index's own job history, else from characters.

A job record keeps each phase's provider-reported prompt and completion tokens and
its call count, and, since jobs are planned when submitted, the plan of each phase
(``Job.estimate``): the characters of the prompts it would send and of the documents
they carry. Together they give the history's rates: prompt tokens per prompt
character, and completion tokens per character of the documents the requests were
built from (a reply to "extract the facts of this passage" grows with the passage,
not with the instructions around it, so per call or per prompt character it drifts
when the next documents are longer or shorter than the last). Jobs with no plan on
record give tokens per call only.

Before an index has history, prompts are estimated at ``TOKENS_PER_CHAR`` (about four
characters a token in English text under the GPT-family BPE tokenizers; other
languages and code run higher) and completions at the rate limiter's reservation
per call. Neither downloads a tokenizer: all are approximations, and the plan says
which one it used.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hopindex.backends.protocols import StateStore
from hopindex.core.models import Document, LlmUsage

TOKENS_PER_CHAR = 0.25
# The completion a call reserves with the rate limiter when it names no max_tokens
# (hopindex/backends/llm/client.py DEFAULT_COMPLETION_ESTIMATE): the same guess.
COMPLETION_TOKENS_PER_CALL = 256
HISTORY_JOBS = 50  # the index's most recent jobs read for its history


def document_tokens(documents: Iterable[Document]) -> int:
    """Tokens of the documents' text (title and body) at ``TOKENS_PER_CHAR``: the dry
    run's figure for the documents an ingest embeds (scheduler/dry_run.py), and a job's
    corpus tokens (``Job.corpus_tokens``, scheduler/corpus.py). One fixed rate, not the
    index's history: the history's rates are of prompt characters and follow whatever
    the provider reported last, so a corpus counted with them would change size with
    the model and the index, and no two jobs' multipliers would compare."""
    return round(sum(len(d.title) + len(d.text) for d in documents) * TOKENS_PER_CHAR)


class TokenBasis(enum.StrEnum):
    """Where a phase's token estimate came from."""

    # Prompt tokens per prompt character and completion tokens per document character,
    # as the provider reported them on this index's earlier jobs of the phase and model.
    HISTORY = "history"
    # Tokens per call the provider reported on this index's earlier jobs: no job on
    # record says what characters it sent, or the phase's prompts are not known yet.
    HISTORY_PER_CALL = "history_per_call"
    CHARACTERS = "characters"  # TOKENS_PER_CHAR of the planned prompts' characters
    NONE = "none"  # no calls, or nothing to estimate from


@dataclass(frozen=True, slots=True)
class SizedHistory:
    """The jobs of a phase whose plan says what characters their calls sent: the
    characters (scaled to the calls the provider answered) and the tokens reported."""

    jobs: int
    prompt_chars: float
    input_chars: float
    prompt_tokens: int
    completion_tokens: int

    @property
    def prompt_per_char(self) -> float:
        return self.prompt_tokens / self.prompt_chars

    @property
    def completion_per_input_char(self) -> float:
        return self.completion_tokens / self.input_chars


@dataclass(frozen=True, slots=True)
class PhaseHistory:
    """What the provider answered for one phase over the index's recent jobs."""

    jobs: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    sized: SizedHistory | None = None

    @property
    def prompt_per_call(self) -> float:
        return self.prompt_tokens / self.calls

    @property
    def completion_per_call(self) -> float:
        return self.completion_tokens / self.calls


def phase_history(state: StateStore, index: str, model: str) -> dict[str, PhaseHistory]:
    """Per qualified phase name, the calls and tokens of the index's recent jobs (those
    with at least one answered call) of ``model``. A job planned for another model is
    left out; one with no plan on record (older, or its planning failed) does not name
    its model and counts for tokens per call."""
    calls: dict[str, list[int]] = {}
    sized: dict[str, list[float]] = {}
    for job in state.list_jobs(index, HISTORY_JOBS):
        if any(figures.get("model", model) != model for figures in job.estimate.values()):
            continue
        for phase, usage in job.llm.items():
            if usage.calls <= 0:
                continue
            row = calls.setdefault(phase, [0, 0, 0, 0])
            row[0] += 1
            row[1] += usage.calls
            row[2] += usage.prompt_tokens
            row[3] += usage.completion_tokens
            sent = _sent_chars(job.estimate.get(phase), usage)
            if sent is not None:
                totals = sized.setdefault(phase, [0, 0.0, 0.0, 0, 0])
                totals[0] += 1
                totals[1] += sent[0]
                totals[2] += sent[1]
                totals[3] += usage.prompt_tokens
                totals[4] += usage.completion_tokens
    return {phase: PhaseHistory(jobs=j, calls=c, prompt_tokens=p, completion_tokens=t,
                                sized=_sized(sized.get(phase)))
            for phase, (j, c, p, t) in calls.items()}


def _sent_chars(planned: Mapping[str, Any] | None, usage: LlmUsage
                ) -> tuple[float, float] | None:
    """The prompt and document characters of the calls ``usage`` counts, from the plan
    of an exact phase: its planned characters times answered calls over planned calls
    (a call that failed for good or a reply the cache gave after all sent no prompt;
    a repair of a malformed reply sent one more)."""
    if planned is None or planned.get("planning") != "exact":
        return None
    calls, prompt, document = (_positive(planned.get(key)) for key in
                               ("calls", "prompt_chars", "input_chars"))
    if calls is None or prompt is None or document is None:
        return None
    share = usage.calls / calls
    return prompt * share, document * share


def _positive(value: object) -> int | None:
    # A record from JSON: a count, or anything else (null, a bool, a damaged value).
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _sized(totals: list[float] | None) -> SizedHistory | None:
    if totals is None:
        return None
    jobs, prompt_chars, input_chars, prompt_tokens, completion_tokens = totals
    return SizedHistory(jobs=int(jobs), prompt_chars=prompt_chars, input_chars=input_chars,
                        prompt_tokens=int(prompt_tokens),
                        completion_tokens=int(completion_tokens))


@dataclass(frozen=True, slots=True)
class TokenEstimate:
    prompt_tokens: int | None
    completion_tokens: int | None
    basis: TokenBasis


def estimate_tokens(calls: int | None, history: PhaseHistory | None, *,
                    prompt_chars: int | None = None, input_chars: int | None = None
                    ) -> TokenEstimate:
    """Tokens of ``calls`` calls whose prompts hold ``prompt_chars`` characters and carry
    ``input_chars`` characters of documents (None: unknown, a bounded phase): per
    character from the history when it has them, else per call from the history, else
    from the prompt characters. None where nothing can say."""
    if calls is None:
        return TokenEstimate(None, None, TokenBasis.NONE)
    if calls == 0:
        return TokenEstimate(0, 0, TokenBasis.NONE)
    sized = history.sized if history is not None else None
    if sized is not None and prompt_chars is not None and input_chars is not None:
        return TokenEstimate(round(prompt_chars * sized.prompt_per_char),
                             round(input_chars * sized.completion_per_input_char),
                             TokenBasis.HISTORY)
    if history is not None:
        return TokenEstimate(round(calls * history.prompt_per_call),
                             round(calls * history.completion_per_call),
                             TokenBasis.HISTORY_PER_CALL)
    completion = calls * COMPLETION_TOKENS_PER_CALL
    if prompt_chars is None:
        return TokenEstimate(None, completion, TokenBasis.CHARACTERS)
    return TokenEstimate(round(prompt_chars * TOKENS_PER_CHAR), completion,
                         TokenBasis.CHARACTERS)
