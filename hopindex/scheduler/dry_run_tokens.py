"""Token estimates of a dry run: from the index's own job history, else from characters.

A job record keeps each phase's provider-reported prompt and completion tokens and
its call count, not the characters it sent, so the history gives tokens per call.
Before an index has history, prompts are estimated at ``TOKENS_PER_CHAR`` (about four
characters a token in English text under the GPT-family BPE tokenizers; other
languages and code run higher) and completions at the rate limiter's reservation
per call. Neither downloads a tokenizer: both are approximations, and the plan says
which one it used.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from hopindex.backends.protocols import StateStore

TOKENS_PER_CHAR = 0.25
# The completion a call reserves with the rate limiter when it names no max_tokens
# (hopindex/backends/llm/client.py DEFAULT_COMPLETION_ESTIMATE): the same guess.
COMPLETION_TOKENS_PER_CALL = 256
HISTORY_JOBS = 50  # the index's most recent jobs read for its history


class TokenBasis(enum.StrEnum):
    """Where a phase's token estimate came from."""

    HISTORY = "history"  # tokens per call the provider reported on this index's jobs
    CHARACTERS = "characters"  # TOKENS_PER_CHAR of the planned prompts' characters
    NONE = "none"  # no calls, or nothing to estimate from


@dataclass(frozen=True, slots=True)
class PhaseHistory:
    """What the provider answered for one phase over the index's recent jobs."""

    jobs: int
    calls: int
    prompt_tokens: int
    completion_tokens: int

    @property
    def prompt_per_call(self) -> float:
        return self.prompt_tokens / self.calls

    @property
    def completion_per_call(self) -> float:
        return self.completion_tokens / self.calls


def phase_history(state: StateStore, index: str) -> dict[str, PhaseHistory]:
    """Per qualified phase name, the calls and tokens of the index's recent jobs (those
    with at least one answered call). Job records do not name the model, so a change of
    model shows only as the history drifting."""
    totals: dict[str, list[int]] = {}
    for job in state.list_jobs(index, HISTORY_JOBS):
        for phase, usage in job.llm.items():
            if usage.calls <= 0:
                continue
            row = totals.setdefault(phase, [0, 0, 0, 0])
            row[0] += 1
            row[1] += usage.calls
            row[2] += usage.prompt_tokens
            row[3] += usage.completion_tokens
    return {phase: PhaseHistory(jobs=j, calls=c, prompt_tokens=p, completion_tokens=t)
            for phase, (j, c, p, t) in totals.items()}


@dataclass(frozen=True, slots=True)
class TokenEstimate:
    prompt_tokens: int | None
    completion_tokens: int | None
    basis: TokenBasis


def estimate_tokens(calls: int | None, prompt_chars: int | None,
                    history: PhaseHistory | None) -> TokenEstimate:
    """Tokens of ``calls`` calls whose prompts hold ``prompt_chars`` characters (None:
    unknown, a bounded phase): per call from the history when there is one, else from
    the characters. None where neither can say."""
    if calls is None:
        return TokenEstimate(None, None, TokenBasis.NONE)
    if calls == 0:
        return TokenEstimate(0, 0, TokenBasis.NONE)
    if history is not None:
        return TokenEstimate(round(calls * history.prompt_per_call),
                             round(calls * history.completion_per_call), TokenBasis.HISTORY)
    if prompt_chars is None:
        return TokenEstimate(None, calls * COMPLETION_TOKENS_PER_CALL, TokenBasis.CHARACTERS)
    return TokenEstimate(round(prompt_chars * TOKENS_PER_CHAR),
                         calls * COMPLETION_TOKENS_PER_CALL, TokenBasis.CHARACTERS)
